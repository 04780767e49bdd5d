import { Writable } from "node:stream";
import winston from "winston";
import { createRedactor } from "./redact";

/** The spec's log levels (docs/config.md, `logLevel`); winston's own set has no `fatal` or `trace`. */
export const LOG_LEVELS = { fatal: 0, error: 1, warn: 2, info: 3, debug: 4, trace: 5 } as const;
export type LogLevel = keyof typeof LOG_LEVELS | "silent";

export interface Logger {
  fatal(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
  trace(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  /** Resolves once every line written so far has reached the output (call before exiting). */
  flush(): Promise<void>;
}

export interface CreateLoggerParams {
  level: LogLevel;
  /** Process name, e.g. "admin" or "submitter"; lands in every line. */
  service: string;
  /** Literal secret values to cut out of every line (admin token, mnemonic, ...). */
  secrets?: ReadonlyArray<string | undefined>;
  /** Where JSON lines go; stdout by default. Tests pass a stream to read the lines back. */
  stream?: Writable;
  defaultFields?: Record<string, unknown>;
}

/** Where winston's Stream transport reads the finished line from (triple-beam's MESSAGE). */
const MESSAGE = Symbol.for("message");

/**
 * JSON lines, one object per line, with secrets scrubbed in the format step so no call site can leak one.
 * Lean on purpose (the auction writes a line per request): lines below the level are dropped before winston
 * sees them (winston formats every line and filters only in the transport), each line is built as one object
 * (no per-call defaultMeta and child copies), and one format step stamps, scrubs and writes it with
 * JSON.stringify, keys sorted as logform's json format wrote them.
 */
export function createLogger(params: CreateLoggerParams): Logger {
  const redactor = createRedactor(params.secrets ?? []);
  const line = winston.format((info) => {
    (info as Record<string, unknown>).timestamp = new Date().toISOString();
    // String keys only: winston's own symbol keys (level, splat) stay on `info`, out of the line.
    const cleaned = redactor.value(info as Record<string, unknown>, { sortKeys: true });
    (info as unknown as Record<symbol, unknown>)[MESSAGE] = JSON.stringify(cleaned);
    return info;
  });
  const stream = params.stream ?? process.stdout;
  const transport = new winston.transports.Stream({ stream });
  const silent = params.level === "silent";
  const maxRank = params.level === "silent" ? -1 : LOG_LEVELS[params.level];
  const root = winston.createLogger({
    levels: LOG_LEVELS,
    level: silent ? "info" : params.level,
    silent,
    format: line(),
    transports: [transport],
    exitOnError: false,
  });
  const base = { service: params.service, pid: process.pid, ...params.defaultFields };
  return wrap({ inner: root, transport, base, inherited: {}, maxRank });
}

interface WrapParams {
  readonly inner: winston.Logger;
  readonly transport: winston.transport;
  /** Every line's fields (service, pid, defaultFields). */
  readonly base: Record<string, unknown>;
  /** Fields of child() calls, the innermost last; the base and a call's own fields win over them. */
  readonly inherited: Record<string, unknown>;
  /** The configured level's rank; -1 when silent. */
  readonly maxRank: number;
}

function wrap(p: WrapParams): Logger {
  const { inner, transport, base, inherited, maxRank } = p;
  const log = (level: keyof typeof LOG_LEVELS) => {
    const rank = LOG_LEVELS[level];
    return (message: string, fields?: Record<string, unknown>) => {
      if (rank > maxRank) {
        return;
      }
      // As winston's child loggers and log(level, message, meta) built it: inherited < base < fields, then level
      // and message (a `message` field appended to it; an Error's own stack and cause kept).
      const info: Record<string, unknown> = Object.assign({}, inherited, base, fields);
      info.level = level;
      info.message = fields?.message ? `${message} ${String(fields.message)}` : message;
      if (fields?.stack) info.stack = fields.stack;
      if (fields?.cause) info.cause = fields.cause;
      inner.log(info as winston.LogEntry);
    };
  };
  return {
    fatal: log("fatal"),
    error: log("error"),
    warn: log("warn"),
    info: log("info"),
    debug: log("debug"),
    trace: log("trace"),
    child: (fields) => wrap({ ...p, inherited: { ...inherited, ...fields } }),
    flush: () =>
      new Promise<void>((resolve) => {
        // A stream transport has nothing buffered of its own; waiting for the stream to drain is enough.
        const stream = (transport as unknown as { _stream?: Writable })._stream;
        if (!stream || stream.writableLength === 0) {
          setImmediate(resolve);
          return;
        }
        stream.once("drain", () => resolve());
      }),
  };
}
