/**
 * The benchmark's webhook receiver, in a process of its own (forked by bench/webhooks-dispatch.ts):
 * answers 200 at once and keeps each delivery's arrival time by its webhook-id, which the parent
 * asks for over IPC.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const arrivals = new Map<string, number>();
let count = 0;
const server = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    count += 1;
    // One arrival per delivery: the event's webhook-id at one endpoint's path.
    const id = `${String(request.headers['webhook-id'])} ${request.url}`;
    if (!arrivals.has(id)) arrivals.set(id, Date.now());
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end('ok');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
process.on('message', (message: { cmd: string }) => {
  if (message.cmd === 'arrivals') process.send!({ arrivals: [...arrivals], count });
  if (message.cmd === 'reset') {
    arrivals.clear();
    count = 0;
    process.send!({ reset: true });
  }
});
process.on('disconnect', () => process.exit(0));
