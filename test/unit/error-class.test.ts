import { RouterError, errorClass, errorCode, isRetriable, notYetUntilMs } from "../../shared/errors";

/** errorClass: one line declares a condition; the class keeps its family's constructor, fields and `instanceof`. */

abstract class WithRetryAt extends RouterError {
  readonly extra: string = "family field";

  constructor(message: string, retryAtMs: number) {
    super(message, { retryAtMs });
  }
}

class TerminalError extends errorClass(RouterError, "TEST_TERMINAL", "terminal") {}
class RetriableError extends errorClass(RouterError, "TEST_RETRIABLE", "retriable") {}
class LaterError extends errorClass(WithRetryAt, "TEST_LATER", "not-yet") {}

describe("errorClass", () => {
  it("fixes code, retriable and notYet per kind", () => {
    const terminal = new TerminalError("no", { chainId: 1 });
    expect([terminal.code, terminal.retriable, terminal.notYet]).toEqual(["TEST_TERMINAL", false, false]);
    expect([errorCode(terminal), isRetriable(terminal)]).toEqual(["TEST_TERMINAL", false]);
    const retriable = new RetriableError("again");
    expect([retriable.code, retriable.retriable, retriable.notYet]).toEqual(["TEST_RETRIABLE", true, false]);
    const later = new LaterError("later", 42);
    expect([later.code, later.retriable, later.notYet]).toEqual(["TEST_LATER", true, true]);
    expect(notYetUntilMs(later)).toBe(42);
  });

  it("keeps the family's constructor and fields, the class's own name, and instanceof", () => {
    const later = new LaterError("later", 42);
    expect(later).toBeInstanceOf(LaterError);
    expect(later).toBeInstanceOf(WithRetryAt);
    expect(later).toBeInstanceOf(RouterError);
    expect(later.extra).toBe("family field");
    expect(later.name).toBe("LaterError");
    expect(later.toJSON()).toEqual({
      type: "LaterError",
      code: "TEST_LATER",
      message: "later",
      context: { retryAtMs: 42 },
    });
    expect(new TerminalError("x")).not.toBeInstanceOf(RetriableError);
  });
});
