import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilentOrString, Logger } from 'pino';

type Log = (...args: unknown[]) => void;

/**
 * request.log whose pino child (the reqId binding, serialized and run through redaction: a few µs)
 * is built only when a line is actually written. Below the logger's level nothing is written, so
 * at LOG_LEVEL=warn a request that succeeds never builds it. The lines written are the child's own.
 */
class LazyRequestLogger {
  #child: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  private get real(): Logger {
    return (this.#child ??= this.parent.child(this.bindings));
  }

  private write(level: Level, args: unknown[]) {
    if (this.#child || this.parent.isLevelEnabled(level)) (this.real[level] as Log)(...args);
  }

  get level(): LevelWithSilentOrString {
    return (this.#child ?? this.parent).level;
  }
  set level(level: LevelWithSilentOrString) {
    this.real.level = level;
  }
  child(bindings: Bindings, options?: ChildLoggerOptions) {
    return this.real.child(bindings, options);
  }
  fatal(...args: unknown[]) {
    this.write('fatal', args);
  }
  error(...args: unknown[]) {
    this.write('error', args);
  }
  warn(...args: unknown[]) {
    this.write('warn', args);
  }
  info(...args: unknown[]) {
    this.write('info', args);
  }
  debug(...args: unknown[]) {
    this.write('debug', args);
  }
  trace(...args: unknown[]) {
    this.write('trace', args);
  }
  silent() {}
}

/** Fastify's childLoggerFactory: lazy for plain requests, pino's own child when a route sets a level or serializers. */
export function lazyRequestLoggers(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const parent = logger as Logger;
  if (Object.keys(options).length > 0 || typeof parent.isLevelEnabled !== 'function') return logger.child(bindings, options);
  return new LazyRequestLogger(parent, bindings) as unknown as FastifyBaseLogger;
}
