/**
 * The processor runs in flight in this process. A sender term ends once every run has stopped (handed its job
 * back), counted here rather than by BullMQ's `Worker.pause()`: that pause first disconnects the worker's
 * blocking connection and waits for its `end` event, which ioredis 5 never emits for a client disconnected
 * while it waits to reconnect (redis/ioredis#1247), so a term ending during a Redis failover never ended.
 */
export interface JobRuns {
  /** `processor`, counted while each call runs. */
  track<A extends unknown[], R>(processor: (...args: A) => Promise<R>): (...args: A) => Promise<R>;
  /** Runs in flight now. */
  count(): number;
  /** Resolves once no run is in flight (at once when none is). */
  drained(): Promise<void>;
}

export function createJobRuns(): JobRuns {
  let inFlight = 0;
  let waiters: Array<() => void> = [];
  const finished = (): void => {
    inFlight -= 1;
    if (inFlight === 0) {
      const wake = waiters;
      waiters = [];
      wake.forEach((resolve) => resolve());
    }
  };
  return {
    track:
      (processor) =>
      async (...args) => {
        inFlight += 1;
        try {
          return await processor(...args);
        } finally {
          finished();
        }
      },
    count: () => inFlight,
    drained: () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
  };
}
