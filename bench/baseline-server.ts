/**
 * The benchmark's baseline: a bare Fastify (the same version the service uses) with one empty
 * route, in its own process like the real server. Prints `listening <port>` once it accepts.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false, trustProxy: ['127.0.0.1'] });
app.post('/baseline', async () => ({ success: true }));

const shutdown = () => {
  void app.close().then(() => process.exit(0));
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.stdout.write(`listening ${port}\n`);
