/**
 * An in-process mutex: callers run one after another in call order. The sender lease makes this process the
 * only sender of its (chain, signer); this makes its jobs, which run concurrently, take nonces one at a time.
 */
export function createSendSlot(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn);
    tail = run.catch(() => undefined);
    return run;
  };
}
