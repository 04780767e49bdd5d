import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Registry } from "prom-client";
import { loadConfig } from "../../shared/config";
import { metricsPortFor, PORTS_PER_SLOT } from "../../shared/metrics/metrics-port";
import { defineRouterMetrics } from "../../shared/metrics/metric-definitions";

const OPS = resolve(__dirname, "../../ops");
const PROMTOOL = ["/usr/bin/promtool", "/usr/local/bin/promtool"].find((p) => existsSync(p));

/** Every `router_*`, `process_*` and `nodejs_*` metric name an expression uses, without the sample suffixes. */
function metricNames(text: string): string[] {
  const names = new Set<string>();
  for (const match of text.matchAll(/\b(?:router|process|nodejs)_[a-z0-9_]+\b/g)) {
    names.add(match[0].replace(/_(bucket|count|sum)$/, ""));
  }
  return [...names];
}

/** The router's own metric names plus the default Node metrics' (standard names, unprefixed). */
function knownMetricNames(): Set<string> {
  const registry = new Registry();
  defineRouterMetrics(registry);
  const names = new Set(registry.getMetricsAsArray().map((m) => m.name));
  for (const name of [
    "process_start_time_seconds",
    "nodejs_heap_size_used_bytes",
    "nodejs_eventloop_lag_p99_seconds",
  ]) {
    names.add(name);
  }
  return names;
}

describe("ops/: alert rules and the Grafana dashboard", () => {
  const rules = readFileSync(resolve(OPS, "router-alerts.rules.yml"), "utf8");

  it("promtool accepts the rules and its rule unit tests pass (when Debian's prometheus package is installed)", () => {
    if (!PROMTOOL) {
      console.warn("NOTE: promtool is absent (apt-get install prometheus); the schema checks below still run");
      return;
    }
    const check = spawnSync(PROMTOOL, ["check", "rules", "router-alerts.rules.yml"], { cwd: OPS, encoding: "utf8" });
    expect(`${check.stdout}${check.stderr}`).toContain("SUCCESS");
    expect(check.status).toBe(0);
    const tests = spawnSync(PROMTOOL, ["test", "rules", "router-alerts.test.yml"], { cwd: OPS, encoding: "utf8" });
    expect(`${tests.stdout}${tests.stderr}`).toContain("SUCCESS");
    expect(tests.status).toBe(0);
  });

  it("every rule has an alert name, an expression, a severity and a summary, and covers the alert catalogue", () => {
    // js-yaml is only a transitive dev dependency; the rules file is plain enough for its v3 API.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const yaml = require("js-yaml") as { safeLoad(text: string): unknown };
    const doc = yaml.safeLoad(rules) as { groups: Array<{ name: string; rules: Array<Record<string, unknown>> }> };
    const all = doc.groups.flatMap((g) => g.rules);
    for (const rule of all) {
      expect(rule).toMatchObject({ alert: expect.stringMatching(/^Router[A-Za-z]+$/), expr: expect.any(String) });
      expect((rule.labels as Record<string, string>).severity).toMatch(/^(critical|warning)$/);
      expect((rule.annotations as Record<string, string>).summary).toEqual(expect.any(String));
    }
    const names = all.map((r) => r.alert);
    for (const required of [
      "RouterNotBidding",
      "RouterSignerGasLow",
      "RouterTransactionStuck",
      "RouterJobsFailed",
      "RouterProviderLagging",
      "RouterSubgraphLagging",
      "RouterInventoryLow",
      "RouterInventoryCritical",
      "RouterLedgerDrift",
      "RouterProcessHeartbeatMissing",
    ]) {
      expect(names).toContain(required);
    }
  });

  it("the rules and the dashboard only use metrics the router exports", () => {
    const known = knownMetricNames();
    const dashboard = readFileSync(resolve(OPS, "grafana/router-dashboard.json"), "utf8");
    const parsed = JSON.parse(dashboard) as { panels: Array<{ targets: Array<{ expr: string }> }> };
    expect(parsed.panels.length).toBeGreaterThanOrEqual(10);
    const unknown = [
      ...metricNames(rules),
      ...parsed.panels.flatMap((p) => p.targets.flatMap((t) => metricNames(t.expr))),
    ].filter((n) => !known.has(n));
    expect(unknown).toEqual([]);
  });

  it("gives every process of a router its own metrics port", () => {
    const chain = (): Record<string, unknown> => ({
      providers: ["http://127.0.0.1:9"],
      transactionManagerAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    });
    const { config } = loadConfig(
      {
        adminToken: "a-long-enough-admin-token",
        mnemonic: "test test test test test test test test test test test junk",
        swapPools: [],
        chainConfig: { "1": { providers: ["http://127.0.0.1:9"] }, "1337": chain(), "42161": chain() },
      },
      {},
    );
    expect(config.metricsPort).toBe(9460);
    expect(config.metricsHost).toBe("127.0.0.1");
    const ports = [
      metricsPortFor(config, "admin", undefined, 0),
      ...[0, 1, 2].map((i) => metricsPortFor(config, "auction", undefined, i)),
      ...[1, 1337, 42161].flatMap((id) =>
        [0, 1].flatMap((i) => [metricsPortFor(config, "submitter", id, i), metricsPortFor(config, "poller", id, i)]),
      ),
    ];
    expect(new Set(ports).size).toBe(ports.length);
    expect(metricsPortFor(config, "auction", undefined, 1)).toBe(9460 + PORTS_PER_SLOT + 1);
    expect(metricsPortFor(config, "poller", 1337, 0)).toBe(9460 + 5 * PORTS_PER_SLOT);
    expect(() => metricsPortFor(config, "poller", 10, 0)).toThrow(RangeError);
  });
});
