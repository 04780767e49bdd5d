import { PassThrough } from "node:stream";
import { createLogger } from "../../shared/logging/create-logger";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";

describe("throttledErrorLog", () => {
  it("logs an error once per window while it repeats, counts the swallowed repeats, and logs a new error at once", async () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c.toString("utf8")));
    const logger = createLogger({ level: "info", service: "test", stream });
    let nowMs = 1_000_000;
    jest.spyOn(Date, "now").mockImplementation(() => nowMs);
    const onError = throttledErrorLog(logger, "redis error", { at: "test.redis" }, 1000);

    onError(new Error("connect ECONNREFUSED"));
    onError(new Error("connect ECONNREFUSED"));
    onError(new Error("connect ECONNREFUSED"));
    onError(new Error("READONLY"));
    nowMs += 1500;
    onError(new Error("READONLY"));
    await logger.flush();

    const lines = chunks
      .join("")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.error, l.suppressedRepeats])).toEqual([
      ["connect ECONNREFUSED", 0],
      ["READONLY", 2],
      ["READONLY", 0],
    ]);
    expect(lines.filter((l) => l.at !== "test.redis" || l.message !== "redis error")).toEqual([]);
  });
});
