import { Writable } from "node:stream";
import winston from "winston";
import { createRedactor } from "./redact";

/** The spec's log levels (router-spec §2.1); winston's own set has no `fatal` or `trace`. */
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

/** JSON lines, one object per line, with secrets scrubbed in a format step so no call site can leak one. */
export function createLogger(params: CreateLoggerParams): Logger {
  const redactor = createRedactor(params.secrets ?? []);
  const scrub = winston.format((info) => {
    const cleaned = redactor.value({ ...info });
    for (const key of Object.keys(info)) {
      delete (info as Record<string, unknown>)[key];
    }
    Object.assign(info, cleaned);
    return info;
  });
  const stream = params.stream ?? process.stdout;
  const transport = new winston.transports.Stream({ stream });
  const root = winston.createLogger({
    levels: LOG_LEVELS,
    level: params.level === "silent" ? "info" : params.level,
    silent: params.level === "silent",
    defaultMeta: { service: params.service, pid: process.pid, ...params.defaultFields },
    format: winston.format.combine(winston.format.timestamp(), scrub(), winston.format.json()),
    transports: [transport],
    exitOnError: false,
  });
  return wrap(root, transport);
}

function wrap(inner: winston.Logger, transport: winston.transport): Logger {
  const log = (level: keyof typeof LOG_LEVELS) => (message: string, fields?: Record<string, unknown>) => {
    inner.log(level, message, fields ?? {});
  };
  return {
    fatal: log("fatal"),
    error: log("error"),
    warn: log("warn"),
    info: log("info"),
    debug: log("debug"),
    trace: log("trace"),
    child: (fields) => wrap(inner.child(fields), transport),
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
