/**
 * One error base for the whole router. Every condition the router can name gets its own subclass with a
 * stable `code` and a `retriable` decision, so callers branch on classes or codes, never on message text.
 * `context` holds machine-readable fields (chain ids, amounts as decimal strings); it must never hold secrets.
 */
export abstract class RouterError extends Error {
  abstract readonly code: string;
  abstract readonly retriable: boolean;
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

/** An unknown throw is treated as retriable: keeping a job alive is the recoverable direction to fail in. */
export function isRetriable(err: unknown): boolean {
  return err instanceof RouterError ? err.retriable : true;
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
