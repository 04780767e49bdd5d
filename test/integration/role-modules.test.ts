import { execFile } from "node:child_process";
import { resolve } from "node:path";

const ROOT = resolve(__dirname, "../..");
/** Packages a role may leave out, each ≈ 2-11 MB of a process's own memory once loaded (docs/operating.md). */
const WATCHED = ["bullmq", "nats", "express", "@bull-board/api", "@bull-board/express"] as const;

/**
 * The packages of WATCHED that requiring a role's start module (dist/, as PM2 runs it) loads, in a node process of
 * its own: what the role pays for before it does any work.
 */
function loadedBy(startModule: string): Promise<string[]> {
  const script = `
    require(${JSON.stringify(resolve(ROOT, "dist/services", startModule))});
    const watched = ${JSON.stringify(WATCHED)};
    const loaded = new Set();
    for (const file of Object.keys(require.cache)) {
      for (const name of watched) if (file.includes("/node_modules/" + name + "/")) loaded.add(name);
    }
    console.log(JSON.stringify([...loaded].sort()));
  `;
  return new Promise((res, rej) =>
    execFile(process.execPath, ["-e", script], { cwd: ROOT }, (err, stdout) =>
      err ? rej(err) : res(JSON.parse(stdout) as string[]),
    ),
  );
}

/** Needs `npm run build` (dist/). A role loads only what it uses: each package below costs every process that loads it. */
describe("what each role loads at start (dist/)", () => {
  it("the auction loads no BullMQ (its first transaction queue loads it), no express, no bull-board", async () => {
    expect(await loadedBy("auction/start-auction.js")).toEqual(["nats"]);
  });

  it("the poller and the submitter load no NATS client, express or bull-board (the poller's BullMQ comes with its queues)", async () => {
    expect(await loadedBy("poller/start-poller.js")).toEqual([]);
    expect(await loadedBy("submitter/start-submitter.js")).toEqual(["bullmq"]);
  });

  it("the admin loads BullMQ and express, no NATS client, and bull-board only with the dashboard's first request", async () => {
    expect(await loadedBy("admin/start-admin.js")).toEqual(["bullmq", "express"]);
  });
});
