/**
 * A stop() that runs its steps once: every later or concurrent call gets the same promise (a signal during a
 * stop, a test's afterEach after the test stopped it), so nothing is closed twice or out of order.
 */
export function stopOnce(steps: () => Promise<void>): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => {
    stopping ??= steps();
    return stopping;
  };
}
