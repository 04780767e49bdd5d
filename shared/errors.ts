/**
 * One error base for the whole router. Every condition the router can name gets its own subclass with a
 * stable `code` and a `retriable` decision, so callers branch on classes or codes, never on message text.
 * `context` holds machine-readable fields (chain ids, amounts as decimal strings); it must never hold secrets.
 */
export abstract class RouterError extends Error {
  abstract readonly code: string;
  abstract readonly retriable: boolean;
  /**
   * "Not yet": only time (or the chain or Redis settling) lifts this refusal, and it is thrown before anything
   * is sent or with what was sent on record. Such an error carries the wall-clock `retryAtMs` it may pass at in
   * its context (notYetUntilMs). A caller that can wait parks until then without spending an attempt (the
   * submitter, services/submitter/outcome-policy.ts); one that cannot answers at once (the admin API's 409).
   */
  readonly notYet: boolean = false;
  readonly context: Readonly<Record<string, unknown>>;

  constructor(message: string, context: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.context = context;
  }

  toJSON(): { type: string; code: string; message: string; context: Readonly<Record<string, unknown>> } {
    return { type: this.name, code: this.code, message: this.message, context: this.context };
  }
}

/**
 * How callers treat every throw of a condition: retried (with backoff), refused for good, or "not yet" (retriable,
 * parked until its `retryAtMs` without spending an attempt; RouterError.notYet).
 */
export type ErrorKind = "retriable" | "terminal" | "not-yet";

type ErrorFamily<A extends unknown[], T extends RouterError> = abstract new (...args: A) => T;

/**
 * The one way a condition is declared: `class XError extends errorClass(Family, "X_CODE", "terminal") {}`, where
 * Family is RouterError or an abstract family of it (whose constructor and fields the class keeps). The class
 * stays a class of its own, so callers still branch with `instanceof` and its name is the error's `name`.
 */
export function errorClass<A extends unknown[], T extends RouterError>(
  Family: ErrorFamily<A, T>,
  code: string,
  kind: ErrorKind,
): ErrorFamily<A, T & Pick<RouterError, "code" | "retriable">> {
  // The cast lets a mixin extend an abstract class with its own constructor; the return type restores both.
  abstract class Declared extends (Family as unknown as ErrorFamily<unknown[], RouterError>) {
    readonly code = code;
    readonly retriable = kind !== "terminal";
    override readonly notYet = kind === "not-yet";
  }
  return Declared as unknown as ErrorFamily<A, T & Pick<RouterError, "code" | "retriable">>;
}

/** An unknown throw is treated as retriable: keeping a job alive is the recoverable direction to fail in. */
export function isRetriable(err: unknown): boolean {
  return err instanceof RouterError ? err.retriable : true;
}

/** The wall-clock ms a "not yet" error may pass at; undefined for any other error, or one without a finite time. */
export function notYetUntilMs(err: unknown): number | undefined {
  if (!(err instanceof RouterError) || !err.notYet) {
    return undefined;
  }
  const retryAtMs = err.context.retryAtMs;
  return typeof retryAtMs === "number" && Number.isFinite(retryAtMs) ? retryAtMs : undefined;
}

export function errorCode(err: unknown): string {
  return err instanceof RouterError ? err.code : "UNKNOWN";
}

/** Message of any thrown value, for logs; never throws itself. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  try {
    return typeof err === "string" ? err : JSON.stringify(err);
  } catch {
    return String(err);
  }
}

/** Any thrown value as an Error (a log line or a callback wants one), its message kept. */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(errorMessage(err));
}
