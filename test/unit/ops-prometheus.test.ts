import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ConfigError, loadConfig } from "../../shared/config";
import { chainMetricsSlots, metricsPortFor } from "../../shared/metrics/metrics-port";
import { ecosystemApps, prometheusConfigFor } from "../../scripts/ops-prometheus";

const ROOT = resolve(__dirname, "../..");
const MNEMONIC = "test test test test test test test test test test test junk";
const TM = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

/** The environment without the variables that pick processes, as on a host that sets none of them. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of [
    "ROUTER_ROLES",
    "AUCTION_INSTANCES",
    "SUBMITTER_STANDBYS",
    "SUBMITTER_INSTANCES",
    "POLLER_STANDBYS",
    "POLLER_PROCESS_PER_CHAIN",
    "REDIS_URL",
    "ROUTER_LISTEN_HOST",
  ]) {
    delete env[name];
  }
  return { ...env, ...extra };
}

function targetsOf(yaml: string): string[] {
  return [...yaml.matchAll(/"([^"\s]+:\d+)"/g)].map((m) => m[1]).sort();
}

function chain(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { providers: ["http://127.0.0.1:9"], transactionManagerAddress: TM, ...extra };
}

function configWith(chainConfig: Record<string, unknown>): ReturnType<typeof loadConfig>["config"] {
  return loadConfig({ adminToken: "a-long-enough-admin-token", mnemonic: MNEMONIC, swapPools: [], chainConfig }, {})
    .config;
}

describe("npm run ops:prometheus", () => {
  it("ops/prometheus.example.yml is what the command prints for config.example.json", () => {
    const generated = prometheusConfigFor(join(ROOT, "config.example.json"), [], cleanEnv(), "config.example.json");
    expect(readFileSync(join(ROOT, "ops/prometheus.example.yml"), "utf8")).toBe(generated);
    // The example's processes: admin, two auction instances, a submitter per swap chain (56, 137) and one poller
    // for both (on 56's poller port), none for chain 1, which is there for gas prices only.
    expect(targetsOf(generated)).toEqual(["9460", "9492", "9493", "9524", "9556", "9588"].map((p) => `127.0.0.1:${p}`));
  });

  it("lists one target per instance: auction instances and submitter/poller standbys", () => {
    const env = cleanEnv({ AUCTION_INSTANCES: "3", SUBMITTER_STANDBYS: "1", POLLER_STANDBYS: "2" });
    const apps = ecosystemApps(join(ROOT, "config.example.json"), env);
    const yaml = prometheusConfigFor(join(ROOT, "config.example.json"), [], env);
    // 1 admin + 3 auctions + 2 chains × 2 submitters + 3 pollers of both chains
    expect(targetsOf(yaml)).toHaveLength(1 + 3 + 2 * 2 + 3);
    expect(apps.map((a) => a.name)).toEqual(["admin", "submitter-56", "submitter-137", "poller", "auction"]);
  });

  it("with POLLER_PROCESS_PER_CHAIN=1, one poller target per chain and instance, on each chain's poller port", () => {
    const file = join(ROOT, "config.example.json");
    const env = cleanEnv({ POLLER_PROCESS_PER_CHAIN: "1", POLLER_STANDBYS: "1" });
    expect(ecosystemApps(file, env).map((a) => a.name)).toEqual([
      "admin",
      "submitter-56",
      "submitter-137",
      "poller-56",
      "poller-137",
      "auction",
    ]);
    const targets = targetsOf(prometheusConfigFor(file, [], env)).map((t) => t.split(":")[1]);
    // The one `poller` app's ports (56's slot) are poller-56's: the two layouts never run side by side on a host.
    expect(targets).toEqual(["9460", "9492", "9493", "9524", "9556", "9557", "9588", "9620", "9621"]);
  });

  it("for a role split, each host's targets are the processes its ROUTER_ROLES picks, together all of them", () => {
    const file = join(ROOT, "config.example.json");
    const all = targetsOf(prometheusConfigFor(file, [{ address: "10.0.0.1" }], cleanEnv()));
    const split = targetsOf(
      prometheusConfigFor(
        file,
        [
          { address: "10.0.0.1", roles: "admin,auction,poller" },
          { address: "10.0.0.2", roles: "submitter" },
        ],
        cleanEnv(),
      ),
    );
    expect(split.filter((t) => t.startsWith("10.0.0.1:")).map((t) => t.split(":")[1])).toEqual([
      "9460",
      "9492",
      "9493",
      "9556",
    ]);
    expect(split.map((t) => t.split(":")[1]).sort()).toEqual(all.map((t) => t.split(":")[1]).sort());
  });

  it("refuses an invalid config or role list with a non-zero exit and the problem", () => {
    const dir = mkdtempSync(join(tmpdir(), "ops-prometheus-"));
    try {
      const bad = join(dir, "config.json");
      writeFileSync(bad, JSON.stringify({ adminToken: "a-long-enough-admin-token", chainConfig: {}, swapPools: [] }));
      expect(() => prometheusConfigFor(bad, [], cleanEnv())).toThrow(ConfigError);
      expect(() =>
        prometheusConfigFor(join(ROOT, "config.example.json"), [{ address: "h", roles: "bidder" }], cleanEnv()),
      ).toThrow(/ROUTER_ROLES: "bidder" is not a role/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("metrics ports per chain (shared/metrics/metrics-port.ts)", () => {
  it("without pins, chains take slots in chainConfig order (today's ports), so a chain added below moves others", () => {
    const before = configWith({ "1": chain(), "137": chain() });
    const after = configWith({ "1": chain(), "56": chain(), "137": chain() });
    expect(metricsPortFor(before, "submitter", 137, 0)).toBe(9460 + (2 + 2 * 1) * 32);
    expect(metricsPortFor(after, "submitter", 137, 0)).toBe(9460 + (2 + 2 * 2) * 32);
  });

  it("a pinned metricsSlot keeps a chain's ports when a chain is added; unpinned chains take the lowest free slots", () => {
    const before = configWith({ "1": chain(), "137": chain({ metricsSlot: 0 }) });
    const after = configWith({ "1": chain(), "56": chain(), "137": chain({ metricsSlot: 0 }) });
    expect(metricsPortFor(after, "submitter", 137, 0)).toBe(metricsPortFor(before, "submitter", 137, 0));
    expect(metricsPortFor(after, "poller", 137, 1)).toBe(metricsPortFor(before, "poller", 137, 1));
    expect([...chainMetricsSlots(after)]).toEqual([
      [1, 1],
      [56, 2],
      [137, 0],
    ]);
  });

  it("refuses two chains pinned to one slot, naming the key", () => {
    expect(() => configWith({ "1": chain({ metricsSlot: 3 }), "137": chain({ metricsSlot: 3 }) })).toThrow(
      expect.objectContaining({
        problems: expect.arrayContaining([
          "chainConfig.137.metricsSlot: 3 is also chain 1's; each chain needs its own slot",
        ]) as unknown,
      }) as Error,
    );
  });
});
