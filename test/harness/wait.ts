import { pollUntil } from "../../shared/timing";

/**
 * The tests' "poll until" is shared/timing.ts's pollUntil (one implementation for tests, benches and tools),
 * under the name the tests read best: `await waitFor("the claim job", () => queue.job(...))`.
 */
export { pollUntil as waitFor };

/**
 * The answer of `url` once its server listens: a process writes its heartbeat as its work starts, which can be
 * before its metrics server accepts connections (ECONNREFUSED until then).
 */
export async function fetchOnceListening(url: string, timeoutMs = 20_000): Promise<Response> {
  return pollUntil(
    `${url} answering`,
    () =>
      fetch(url).then(
        (response) => response,
        () => undefined,
      ),
    timeoutMs,
  );
}
