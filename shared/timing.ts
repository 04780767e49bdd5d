/**
 * The small timing helpers every process needs, written once: bounded waits keep a stuck Redis, RPC or stdout
 * from holding a request, a shutdown or a readiness probe for ever.
 */

/**
 * Resolves after `ms`. The timer keeps the process alive on purpose: a command-line tool awaiting it with
 * nothing else pending would otherwise exit in the middle, with code 0.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The one "poll until" of tests, benches and tools: calls `probe` every `everyMs` until it returns something
 * other than `undefined` or `false`, and resolves with that; rejects naming `what` after `timeoutMs`. A probe
 * that throws fails the wait at once, so a broken probe never looks like a slow system (a probe for a server
 * that may not listen yet returns false on a refused connection instead).
 */
export async function pollUntil<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 20_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts; never rejects. */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * `promise`, or a rejection after `timeoutMs` (the promise itself runs on): `timedOut()`'s error, built when the
 * time runs out (so it can name the step reached), or `no answer within <ms> ms`.
 */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number, timedOut?: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut?.() ?? new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** True once `promise` settles (fulfilled or rejected) within `ms`, false when the time runs out first. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `promise`, started ahead of the step that judges it (reads that can run at once, judged in their order): a
 * caller that returns before awaiting it, because an earlier step decided, must not leave an unhandled
 * rejection behind, which stops the process (shared/process/run-service.ts). Awaiting it still rejects.
 */
export function readAhead<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}
