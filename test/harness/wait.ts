/**
 * The tests' "poll until" is shared/timing.ts's pollUntil (one implementation for tests, benches and tools),
 * under the name the tests read best: `await waitFor("the claim job", () => queue.job(...))`.
 */
export { pollUntil as waitFor } from "../../shared/timing";
