import { PassThrough } from "node:stream";
import { createLogger, type Logger } from "../../shared/logging/create-logger";

export interface LogCapture {
  readonly logger: Logger;
  /** The raw output, for checks that a value appears nowhere in it. */
  text(): string;
  lines(): Array<Record<string, unknown>>;
  /** Lines whose `at` equals `at` (and, when given, whose message includes `message`). */
  find(at: string, message?: string): Array<Record<string, unknown>>;
}

/** A trace-level JSON logger whose lines a test reads back: the one log capture every test uses. */
export function captureLogs(service = "test"): LogCapture {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c.toString("utf8")));
  const logger = createLogger({ level: "trace", service, stream });
  const text = (): string => chunks.join("");
  const lines = (): Array<Record<string, unknown>> =>
    text()
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    logger,
    text,
    lines,
    find: (at, message) =>
      lines().filter((l) => l.at === at && (message === undefined || String(l.message).includes(message))),
  };
}

/** A predicate on captured (or child-process) JSON log lines: the line's message is exactly `message`. */
export const isMessage =
  (message: string) =>
  (line: Record<string, unknown>): boolean =>
    line.message === message;
