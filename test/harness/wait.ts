/**
 * The one "poll until" of the tests: calls `probe` every `everyMs` until it returns something other than
 * `undefined` or `false`, and resolves with that; rejects naming `what` after `timeoutMs`. A probe that throws
 * fails the wait at once (a broken probe must not look like a slow system).
 */
export async function waitFor<T>(
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
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
