/**
 * wrk (C; Debian package `wrk`) as the benchmark's load generator. A load generator written in
 * JavaScript takes a large share of a small machine's CPU from the service and PostgreSQL it is
 * meant to measure; wrk does the same work for a fraction of it.
 *
 * Every run gets a generated Lua script. wrk loads it into one Lua state per thread (and one for
 * setup/done in its main thread):
 *   - setup(thread) numbers the threads (global `tid` in each thread's state);
 *   - request() builds every request: a distinct X-Forwarded-For from the thread id and a
 *     per-thread counter, plus what the phase adds (for sales: key, click id, transaction_id);
 *   - response() counts the status codes and, for each 2xx, keeps the id read from its body;
 *   - done() reads the per-thread counters back (thread:get), writes the acknowledged ids to a
 *     file and prints one JSON line with totals and latency percentiles.
 *
 * With a `rate`, the run is open-loop: delay() gives each request a slot on a fixed schedule
 * (rate / threads per thread), and the latency that counts is measured from that slot, not from
 * the send, so a server that falls behind is charged for the time requests waited to be sent
 * (coordinated omission; wrk's own figures would hide it). That needs the request's id in its
 * body: the answer pattern is matched against the body to find it again in the response.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

/** The executable on PATH, or undefined. */
export function findWrk(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'wrk');
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** `wrk 4.1.0 [epoll]`-style first line of `wrk -v`, for the report. */
export function wrkVersion(wrk: string): string {
  const out = spawnSync(wrk, ['-v'], { encoding: 'utf8', timeout: 5_000 });
  const first = (out.stdout ?? '').split('\n')[0] ?? '';
  return first.replace(/\s*Copyright.*$/, '').trim() || 'wrk (version unknown)';
}

/** A Lua string literal for any text: bytes outside a safe set become \ddd escapes. */
export function luaString(value: string): string {
  let out = '"';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /^[A-Za-z0-9 _.,:;/=+\-@#*!?~{}]$/.test(c) ? c : `\\${String(byte).padStart(3, '0')}`;
  }
  return `${out}"`;
}

/** What one phase sends and what it reads back. */
export interface RequestSpec {
  /** Request path (POST, JSON body). */
  path: string;
  /** Lua placed before request(): constants and tables the build step uses. */
  prelude: string;
  /**
   * Lua statements run inside request() that assign the locals `body` (the JSON body) and `extra`
   * (additional header lines, each ending in \r\n, or ""). In scope: `n` (this thread's counter,
   * 0-based), `tid` (thread id, 0-based), `i` (run-wide index n * THREADS + tid) and `floor`.
   */
  build: string;
  /** Lua pattern with one capture, matched against every 2xx body: the id to keep, or a marker. */
  answer: string;
  /** Keep every captured id (the durability check reads them). */
  collectIds: boolean;
}

/** One JSON body for every request (a click, the bare baseline route). */
export function fixedBodySpec(path: string, body: string, answer: string, collectIds: boolean): RequestSpec {
  return { path, prelude: `local BODY = ${luaString(body)}`, build: '  body = BODY\n  extra = ""', answer, collectIds };
}

/**
 * An open-loop run's latency, from each request's scheduled slot to its 2xx (µs), and how far the
 * sends fell behind the schedule (lag: from the slot to the send).
 */
export interface PacedLatency {
  /** 2xx answers matched to their slot. */
  count: number;
  p50: number;
  p99: number;
  max: number;
  lagP99: number;
  lagMax: number;
}

export interface WrkThread {
  tid: number;
  /** request() calls. wrk calls request() once more in thread 0 to check the script (never sent). */
  sent: number;
  /** 2xx responses. */
  ok: number;
  /** 2xx responses whose body did not match the answer pattern. */
  unreadable: number;
}

export interface WrkResult {
  durationUs: number;
  /** Completed responses (any status). */
  requests: number;
  bytes: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { p50: number; p99: number; mean: number; max: number };
  statuses: Record<string, number>;
  threads: WrkThread[];
  /** The ids captured from 2xx bodies when collectIds, in no particular order. */
  ids: string[];
  /** With a rate: latency from the schedule. */
  paced?: PacedLatency;
  /** wrk's own text summary, for diagnostics. */
  text: string;
}

export interface WrkOptions {
  wrk: string;
  /** http://127.0.0.1:<port> */
  baseUrl: string;
  threads: number;
  connections: number;
  /** Seconds. */
  duration: number;
  /** Seconds; latencies above it are counted as timeouts by wrk. */
  timeout: number;
  /** Client addresses are 10.x.y.z from ipBase + 1 upward: i-th request of the run gets ipBase + i + 1. */
  ipBase: number;
  /** Directory for the generated script and the id file. */
  dir: string;
  /** File-name stem, unique per run. */
  name: string;
  spec: RequestSpec;
  /** Requests per second over all threads, on a fixed schedule (open loop); unset: as fast as answered. */
  rate?: number;
}

const RESULT_MARK = 'BENCH_WRK_RESULT ';

function luaScript(options: WrkOptions, idsPath: string): string {
  const { spec } = options;
  const url = new URL(options.baseUrl);
  const head = `POST ${spec.path} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n`;
  // String.raw: the backslash escapes below are Lua's, not JavaScript's.
  return String.raw`-- Generated by bench/ingest.ts for one wrk run (${options.name}); see bench/wrk.ts.
local THREADS = ${options.threads}
local IP_BASE = ${options.ipBase}
local HEAD = ${luaString(head)}
local ANSWER = ${luaString(spec.answer)}
local COLLECT = ${spec.collectIds ? 'true' : 'false'}
local IDS_PATH = ${luaString(idsPath)}
local floor = math.floor
local RATE = ${options.rate ?? 0}

${spec.prelude}

-- Main thread: number the threads (setup runs before each thread's init) and keep them for done().
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  threads[#threads + 1] = thread
end

-- Per-thread state, read back by done() through thread:get.
sent = 0
ok = 0
unreadable = 0
statuses = {}
ids = {}

${options.rate ? PACING_LUA : ''}
local function client_ip(k)
  return (10 + floor(k / 16777216)) .. "." .. (floor(k / 65536) % 256) .. "." .. (floor(k / 256) % 256) .. "." .. (k % 256)
end

function request()
  local n = sent
  sent = n + 1
  local i = n * THREADS + tid
  local body, extra
${spec.build}
${options.rate ? '  scheduled(body)' : ''}
  return HEAD .. "X-Forwarded-For: " .. client_ip(IP_BASE + i + 1) .. "\r\n" .. extra ..
    "Content-Length: " .. #body .. "\r\n\r\n" .. body
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status >= 200 and status < 300 then
    ok = ok + 1
    local id = string.match(body, ANSWER)
    if id == nil then
      unreadable = unreadable + 1
    else
${options.rate ? '      answered(id)' : ''}
      if COLLECT then ids[#ids + 1] = id end
    end
  end
end

function done(summary, latency, requests)
  local per_thread, codes = {}, {}
  local file = nil
  if COLLECT then file = assert(io.open(IDS_PATH, "w")) end
  for _, t in ipairs(threads) do
    per_thread[#per_thread + 1] = string.format('{"tid":%d,"sent":%d,"ok":%d,"unreadable":%d}',
      t:get("tid"), t:get("sent"), t:get("ok"), t:get("unreadable"))
    for code, count in pairs(t:get("statuses")) do codes[code] = (codes[code] or 0) + count end
${options.rate ? '    merge_paced(t)' : ''}
    if file then
      for _, id in ipairs(t:get("ids")) do file:write(id, "\n") end
    end
  end
  if file then file:close() end
  local code_parts = {}
  for code, count in pairs(codes) do code_parts[#code_parts + 1] = string.format('"%d":%d', code, count) end
  local e = summary.errors
  io.write("${RESULT_MARK}", string.format(
    '{"duration_us":%d,"requests":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%.1f,"p99":%.1f,"mean":%.1f,"max":%d},"statuses":{%s},"threads":[%s]%s}',
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean, latency.max,
    table.concat(code_parts, ","), table.concat(per_thread, ","), ${options.rate ? 'paced_json()' : '""'}), "\n")
end
`;
}

/**
 * Open-loop pacing (see the header). delay() runs before every request of every connection and
 * claims the thread's next slot; request() takes the oldest claimed slot (timers fire in slot
 * order, so it is its own or an earlier one: the latency can only be overstated) and keeps it
 * under the request's id; response() measures from it. LuaJIT's ffi gives the wall clock.
 */
const PACING_LUA = String.raw`local ffi = require("ffi")
ffi.cdef[[ typedef struct { long tv_sec; long tv_nsec; } bench_timespec; int clock_gettime(int clk, bench_timespec *tp); ]]
local clock_now = ffi.new("bench_timespec")
local function now_us()
  ffi.C.clock_gettime(1, clock_now) -- CLOCK_MONOTONIC
  return tonumber(clock_now.tv_sec) * 1e6 + tonumber(clock_now.tv_nsec) / 1e3
end
local INTERVAL_US = THREADS * 1e6 / RATE
local next_slot = nil
local claimed, claimed_first, claimed_last = {}, 1, 0
local started = {}
paced = {}
lags = {}

function delay()
  local now = now_us()
  next_slot = next_slot or now
  local slot = next_slot
  next_slot = slot + INTERVAL_US
  claimed_last = claimed_last + 1
  claimed[claimed_last] = slot
  local wait_ms = (slot - now) / 1000
  return wait_ms > 0 and floor(wait_ms) or 0
end

-- Measured from the slot, or from the send when it went out early (floor above): never understated.
function scheduled(body)
  local now = now_us()
  local slot = now
  if claimed_first <= claimed_last then
    slot = claimed[claimed_first]
    claimed[claimed_first] = nil
    claimed_first = claimed_first + 1
  end
  lags[#lags + 1] = math.max(0, now - slot)
  local id = string.match(body, ANSWER)
  if id == nil then error("paced run: the answer pattern does not match the request body") end
  started[id] = math.min(slot, now)
end

function answered(id)
  local from = started[id]
  if from ~= nil then
    paced[#paced + 1] = now_us() - from
    started[id] = nil
  end
end

local all_paced, all_lags = {}, {}
function merge_paced(t)
  for _, v in ipairs(t:get("paced")) do all_paced[#all_paced + 1] = v end
  for _, v in ipairs(t:get("lags")) do all_lags[#all_lags + 1] = v end
end

local function percentile(sorted, q)
  if #sorted == 0 then return 0 end
  return sorted[math.max(1, math.ceil(q * #sorted))]
end

function paced_json()
  table.sort(all_paced)
  table.sort(all_lags)
  return string.format(',"paced":{"count":%d,"p50":%.1f,"p99":%.1f,"max":%.1f,"lagP99":%.1f,"lagMax":%.1f}',
    #all_paced, percentile(all_paced, 0.5), percentile(all_paced, 0.99), percentile(all_paced, 1),
    percentile(all_lags, 0.99), percentile(all_lags, 1))
end
`;

/** wrk processes still running, so that cleanup after a signal can end them. */
const active = new Set<ChildProcess>();

export function killWrkRuns(): void {
  for (const proc of active) proc.kill('SIGKILL');
}

interface RawResult {
  duration_us: number;
  requests: number;
  bytes: number;
  errors: WrkResult['errors'];
  latency_us: WrkResult['latencyUs'];
  statuses: Record<string, number>;
  threads: WrkThread[];
  paced?: PacedLatency;
}

/** One wrk run; bounded: killed if it has not exited `duration + 30` s after it started. */
export async function runWrk(options: WrkOptions): Promise<WrkResult> {
  const scriptPath = join(options.dir, `${options.name}.lua`);
  const idsPath = join(options.dir, `${options.name}.ids`);
  await writeFile(scriptPath, luaScript(options, idsPath));
  const args = [
    '-t', String(options.threads),
    '-c', String(options.connections),
    '-d', `${options.duration}s`,
    '--timeout', `${options.timeout}s`,
    '-s', scriptPath,
    `${options.baseUrl}${options.spec.path}`,
  ];
  const proc = spawn(options.wrk, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  active.add(proc);
  let stdout = '';
  let stderr = '';
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const limitMs = (options.duration + 30) * 1_000;
  const killer = setTimeout(() => proc.kill('SIGKILL'), limitMs);
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code, signal) => resolve({ code, signal }));
  }).finally(() => {
    clearTimeout(killer);
    active.delete(proc);
  });
  const line = stdout.split('\n').find((l) => l.startsWith(RESULT_MARK));
  if (exit.code !== 0 || !line || stderr.trim() !== '') {
    throw new Error(
      `wrk ${args.join(' ')} failed (exit code ${exit.code ?? '-'}${exit.signal ? `, signal ${exit.signal}` : ''}` +
        `${exit.signal === 'SIGKILL' ? `, killed after ${limitMs / 1000} s` : ''}):\n${stdout}\n${stderr}`,
    );
  }
  const raw = JSON.parse(line.slice(RESULT_MARK.length)) as RawResult;
  const ids = options.spec.collectIds ? (await readFile(idsPath, 'utf8')).split('\n').filter((l) => l !== '') : [];
  return {
    durationUs: raw.duration_us,
    requests: raw.requests,
    bytes: raw.bytes,
    errors: raw.errors,
    latencyUs: raw.latency_us,
    statuses: raw.statuses,
    threads: raw.threads,
    ids,
    ...(raw.paced ? { paced: raw.paced } : {}),
    text: stdout.split('\n').filter((l) => !l.startsWith(RESULT_MARK)).join('\n'),
  };
}
