import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/**
 * ecosystem.config.js as PM2 loads it (a fresh node process, the env PM2 would see): which apps one host runs
 * for a ROUTER_ROLES selection, and that a chain in no swap pool (chain 1, gas pricing only) gets no submitter
 * or poller unless named.
 */
const ROOT = resolve(__dirname, "../..");
const TOKEN = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";

interface Loaded {
  readonly names?: string[];
  readonly error?: string;
}

let dir: string;
let configFile: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "router-ecosystem-"));
  configFile = join(dir, "config.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      chainConfig: { "1": {}, "1337": {}, "1338": {} },
      swapPools: [
        {
          assets: [
            { chainId: 1337, assetId: TOKEN },
            { chainId: 1338, assetId: TOKEN },
          ],
        },
      ],
    }),
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `script` in a fresh node process with the env PM2 would see (ecosystem.config.js reads it at require). */
function runEcosystem(script: string, env: Record<string, string>, file = configFile): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      process.execPath,
      ["-e", script],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", ROUTER_CONFIG_FILE: file, ROUTER_LOG_DIR: join(dir, "logs"), ...env },
      },
      (err, stdout) => (err ? reject(err) : resolvePromise(stdout)),
    );
  });
}

async function load(env: Record<string, string>, file = configFile): Promise<Loaded> {
  const script =
    'try { const c = require("./ecosystem.config.js"); console.log(JSON.stringify({ names: c.apps.map((a) => a.name) })); }' +
    " catch (e) { console.log(JSON.stringify({ error: e.message })); }";
  return JSON.parse(await runEcosystem(script, env, file)) as Loaded;
}

describe("ecosystem.config.js: ROUTER_ROLES", () => {
  it("runs everything when unset, but no submitter or poller for chain 1, which is in no swap pool", async () => {
    expect(await load({})).toEqual({
      names: ["admin", "submitter-1337", "submitter-1338", "poller", "auction"],
    });
    expect(await load({ ROUTER_ROLES: "" })).toEqual(await load({}));
  });

  it("runs only the selected roles and chains", async () => {
    expect(await load({ ROUTER_ROLES: "auction,submitter,poller:1337" })).toEqual({
      names: ["submitter-1337", "submitter-1338", "poller", "auction"],
    });
    expect(await load({ ROUTER_ROLES: " admin , submitter:1338 " })).toEqual({ names: ["admin", "submitter-1338"] });
  });

  it("gives chain 1 a submitter and a poller when named explicitly", async () => {
    expect(await load({ ROUTER_ROLES: "submitter:1,poller:1,poller" })).toEqual({
      names: ["submitter-1", "poller"],
    });
  });

  it("runs the ledger only when the config has a ledger section (and ROUTER_ROLES selects it)", async () => {
    const withLedger = join(dir, "with-ledger.json");
    writeFileSync(
      withLedger,
      JSON.stringify({
        chainConfig: { "1": {}, "1337": {} },
        swapPools: [],
        ledger: { databaseUrl: "postgres://router@127.0.0.1/ledger" },
      }),
    );
    expect((await load({}, withLedger)).names).toContain("ledger");
    expect(await load({ ROUTER_ROLES: "ledger" }, withLedger)).toEqual({ names: ["ledger"] });
    expect(await load({ ROUTER_ROLES: "admin" }, withLedger)).toEqual({ names: ["admin"] });
    expect(await load({ ROUTER_ROLES: "ledger,admin" })).toEqual({ names: ["admin"] });
    expect((await load({ ROUTER_ROLES: "ledger:1" }, withLedger)).error).toMatch(/ledger takes no chain id/);
  });

  it("runs every chain when there is no swap pool at all (a router winding down still claims)", async () => {
    const noPools = join(dir, "no-pools.json");
    writeFileSync(noPools, JSON.stringify({ chainConfig: { "1": {}, "1337": {} }, swapPools: [] }));
    expect(await load({ ROUTER_ROLES: "poller" }, noPools)).toEqual({ names: ["poller"] });
  });

  it.each([
    ["bidder", /ROUTER_ROLES: "bidder" is not a role/],
    ["auction,poller:", /ROUTER_ROLES: "poller:" is not a role/],
    ["admin:1", /ROUTER_ROLES: "admin:1": admin takes no chain id/],
    ["submitter:42", /ROUTER_ROLES: "submitter:42": chain 42 is not in chainConfig \(configured: 1, 1337, 1338\)/],
  ])("refuses %j with an error naming ROUTER_ROLES", async (roles, expected) => {
    const loaded = await load({ ROUTER_ROLES: roles });
    expect(loaded.names).toBeUndefined();
    expect(loaded.error).toMatch(expected);
  });

  it("keeps the per-chain env and instances of the apps it selects", async () => {
    const script =
      'const c = require("./ecosystem.config.js"); console.log(JSON.stringify(c.apps.map((a) => [a.name, a.instances, a.env.CHAIN_ID ?? null])));';
    const out = await runEcosystem(script, {
      ROUTER_ROLES: "auction,submitter:1338,poller:1337",
      AUCTION_INSTANCES: "3",
      SUBMITTER_STANDBYS: "1",
      POLLER_STANDBYS: "2",
    });
    expect(JSON.parse(out)).toEqual([
      ["submitter-1338", 2, "1338"],
      ["poller", 3, "1337"],
      ["auction", 3, null],
    ]);
  });
});

describe("ecosystem.config.js: one poller process for every polled chain, or one per chain", () => {
  const pollers = async (env: Record<string, string>): Promise<Array<[string, number, string]> | string> =>
    JSON.parse(
      await runEcosystem(
        'try { const c = require("./ecosystem.config.js"); console.log(JSON.stringify(c.apps.filter((a) => a.script.includes("/poller/")).map((a) => [a.name, a.instances, a.env.CHAIN_ID]))); }' +
          " catch (e) { console.log(JSON.stringify(e.message)); }",
        env,
      ),
    ) as Array<[string, number, string]> | string;

  it("runs one `poller` app (1 + POLLER_STANDBYS instances) with CHAIN_ID listing every chain this host polls", async () => {
    expect(await pollers({})).toEqual([["poller", 1, "1337,1338"]]);
    expect(await pollers({ POLLER_STANDBYS: "1", POLLER_PROCESS_PER_CHAIN: "0" })).toEqual([
      ["poller", 2, "1337,1338"],
    ]);
    // chainConfig order, whatever order ROUTER_ROLES names them in.
    expect(await pollers({ ROUTER_ROLES: "poller:1338,poller:1" })).toEqual([["poller", 1, "1,1338"]]);
    expect(await pollers({ ROUTER_ROLES: "admin" })).toEqual([]);
  });

  it("runs poller-<chainId> per chain with POLLER_PROCESS_PER_CHAIN=1, and refuses another value naming it", async () => {
    expect(await pollers({ POLLER_PROCESS_PER_CHAIN: "1", POLLER_STANDBYS: "1" })).toEqual([
      ["poller-1337", 2, "1337"],
      ["poller-1338", 2, "1338"],
    ]);
    expect(await pollers({ POLLER_PROCESS_PER_CHAIN: "yes" })).toBe(
      'ecosystem.config.js: POLLER_PROCESS_PER_CHAIN must be 0 or 1, got "yes"',
    );
  });
});

describe("ecosystem.config.js: memory limits per role (docs/operating.md, npm run bench:memory)", () => {
  type App = {
    name: string;
    node_args?: string;
    max_memory_restart?: string;
    disable_source_map_support?: boolean;
    env: Record<string, string>;
  };
  const apps = async (env: Record<string, string>): Promise<App[]> =>
    JSON.parse(await runEcosystem('console.log(JSON.stringify(require("./ecosystem.config.js").apps));', env)) as App[];
  const flag = (args: string | undefined, name: string): number | undefined => {
    const m = new RegExp(`--${name}=([0-9]+)`).exec(args ?? "");
    return m ? Number(m[1]) : undefined;
  };

  it("limits the heap of admin, auction and poller, with PM2's restart threshold above it; the submitter only its young generation", async () => {
    const all = await apps({});
    expect(all.map((a) => a.name)).toEqual(["admin", "submitter-1337", "submitter-1338", "poller", "auction"]);
    for (const app of all) {
      const semi = flag(app.node_args, "max-semi-space-size");
      const old = flag(app.node_args, "max-old-space-size");
      const restartMb = Number(/^([0-9]+)M$/.exec(app.max_memory_restart ?? "")?.[1]);
      if (app.name.startsWith("submitter-")) {
        // 4 MB semi-spaces held bench:submitter's rate, 2 MB did not; an old-space limit and the allocator settings
        // lost rate (docs/operating.md, "Memory per role").
        expect([app.name, app.node_args, app.env.MALLOC_ARENA_MAX, restartMb]).toEqual([
          app.name,
          "--max-semi-space-size=4",
          undefined,
          384,
        ]);
        continue;
      }
      expect([app.name, semi !== undefined && semi >= 1, old !== undefined && old >= 96]).toEqual([
        app.name,
        true,
        true,
      ]);
      // max_memory_restart is the guard for memory outside the V8 heap: below the heap limit it would restart a
      // process whose heap is still within what it is allowed.
      expect(restartMb).toBeGreaterThan(old as number);
      expect(app.env).toMatchObject({ MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072" });
    }
    // The role's env is merged, not replaced: pollers and submitters keep their chains.
    expect(all.filter((a) => a.name.startsWith("poller")).map((a) => a.env.CHAIN_ID)).toEqual(["1337,1338"]);
  });

  it("preloads jemalloc for the auction instances only, where the library exists (ROUTER_JEMALLOC: another path, empty: off)", async () => {
    const preloads = async (env: Record<string, string>) =>
      (await apps(env)).map((a) => [a.name, a.env.LD_PRELOAD, a.env.MALLOC_CONF]);
    // Any existing file stands in for the library: ecosystem.config.js only checks that it is there.
    const library = process.execPath;
    expect(await preloads({ ROUTER_JEMALLOC: library })).toEqual([
      ["admin", undefined, undefined],
      ["submitter-1337", undefined, undefined],
      ["submitter-1338", undefined, undefined],
      ["poller", undefined, undefined],
      ["auction", library, "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0"],
    ]);
    for (const off of ["", join(dir, "no-such-libjemalloc.so.2")]) {
      expect((await preloads({ ROUTER_JEMALLOC: off })).filter(([, preload]) => preload !== undefined)).toEqual([]);
    }
  });

  it("keeps PM2 from turning node's source maps on (2-4 MB per process) unless ROUTER_SOURCE_MAPS=1", async () => {
    // PM2 calls process.setSourceMapsEnabled(true) in each process it forks unless the app sets this.
    expect(new Set((await apps({})).map((a) => a.disable_source_map_support))).toEqual(new Set([true]));
    const debugging = await apps({ ROUTER_SOURCE_MAPS: "1" });
    expect(new Set(debugging.map((a) => a.disable_source_map_support))).toEqual(new Set([false]));
  });

  it("lets ROUTER_NODE_ARGS replace the flags (empty: node's defaults, to measure without them)", async () => {
    expect((await apps({ ROUTER_NODE_ARGS: "" })).map((a) => a.node_args)).toEqual(Array(5).fill(""));
    const custom = await apps({ ROUTER_NODE_ARGS: "--max-old-space-size=512" });
    expect(new Set(custom.map((a) => a.node_args))).toEqual(new Set(["--max-old-space-size=512"]));
  });
});
