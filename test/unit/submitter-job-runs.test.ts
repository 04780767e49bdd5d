import { createJobRuns } from "../../services/submitter/lease/job-runs";

/** What a sender term's end waits for (services/submitter/lease/job-runs.ts): every processor run stopped. */
describe("job runs: a term ends once every run has stopped", () => {
  const deferred = (): { promise: Promise<string>; resolve(v: string): void; reject(e: Error): void } => {
    let resolve: (v: string) => void = () => undefined;
    let reject: (e: Error) => void = () => undefined;
    const promise = new Promise<string>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };

  it("drained() resolves at once with no run in flight", async () => {
    const runs = createJobRuns();
    await expect(runs.drained()).resolves.toBeUndefined();
    expect(runs.count()).toBe(0);
  });

  it("drained() waits for the last run, whether it returns or throws, and passes results through", async () => {
    const runs = createJobRuns();
    const first = deferred();
    const second = deferred();
    const processor = runs.track((d: { promise: Promise<string> }) => d.promise);
    const a = processor(first);
    const b = processor(second);
    expect(runs.count()).toBe(2);
    let drained = false;
    const waiting = runs.drained().then(() => {
      drained = true;
    });

    first.resolve("done");
    await expect(a).resolves.toBe("done");
    expect([runs.count(), drained]).toEqual([1, false]);

    second.reject(new Error("handed back"));
    await expect(b).rejects.toThrow("handed back");
    await waiting;
    expect([runs.count(), drained]).toEqual([0, true]);
  });
});
