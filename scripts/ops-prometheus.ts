/**
 * `npm run ops:prometheus -- [config.json] [--host <address>[=<ROUTER_ROLES>]]...`: prints a Prometheus scrape
 * config whose targets are exactly the metrics ports of the processes ecosystem.config.js starts for that config
 * (roles, auction instances, submitter and poller standbys, per-chain selections). The process list comes from
 * ecosystem.config.js itself, the ports from shared/metrics/metrics-port.ts, so neither can drift from them.
 *   --host <address>               the address Prometheus reaches the processes at (default: metricsHost, or
 *                                  127.0.0.1 when that is a wildcard); the processes are those ROUTER_ROLES picks
 *   --host <address>=<roles>       one host of a role split (repeat per host): its ROUTER_ROLES value
 *   --rule-file <path>             the alert rules' path as Prometheus sees it (default router-alerts.rules.yml,
 *                                  next to the scrape config: ops/ holds both)
 * AUCTION_INSTANCES, SUBMITTER_STANDBYS and POLLER_STANDBYS are read from the environment, as ecosystem.config.js
 * reads them. Exit code 1 with every problem on stderr when the config or a role list is invalid.
 */
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { ConfigError, configFilePath, loadConfigFile } from "../shared/config";
import type { RouterConfig } from "../shared/config";
import { isProcessRole, metricsPortFor, type ProcessRole } from "../shared/metrics/metrics-port";

/** One host's processes, as Prometheus targets. */
export interface HostSelection {
  readonly address: string;
  /** ROUTER_ROLES for this host; undefined = the environment's. */
  readonly roles?: string;
}

/** One PM2 app as ecosystem.config.js declares it (the fields this script reads). */
interface EcosystemApp {
  readonly name: string;
  readonly script: string;
  readonly instances?: number;
  readonly env?: { readonly CHAIN_ID?: string };
}

export interface ScrapeGroup {
  readonly app: string;
  readonly targets: readonly string[];
}

/** The folder holding ecosystem.config.js: the repository root from scripts/ and from dist/scripts/. */
function projectRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "ecosystem.config.js"))) {
      return dir;
    }
    if (path.dirname(dir) === dir) {
      throw new Error("ops-prometheus: ecosystem.config.js not found above " + __dirname);
    }
  }
}

/**
 * The apps ecosystem.config.js declares for this config file and environment. Evaluated in a sandbox of its own
 * (a fresh evaluation per call, the given environment, no log folder created), so one run can ask for several hosts.
 */
export function ecosystemApps(configFile: string, env: NodeJS.ProcessEnv): EcosystemApp[] {
  const root = projectRoot();
  const file = path.join(root, "ecosystem.config.js");
  const sandboxFs = { ...fs, mkdirSync: (): undefined => undefined };
  const module = { exports: {} as { apps?: EcosystemApp[] } };
  const requireFromRoot = createRequire(file);
  const sandboxRequire = (id: string): unknown => (id === "node:fs" || id === "fs" ? sandboxFs : requireFromRoot(id));
  // A function of this realm (not node:vm), so the errors the file throws are this realm's Error.
  const evaluate = new Function("require", "module", "exports", "__dirname", "process", fs.readFileSync(file, "utf8"));
  // This process with another environment: the file may read more of `process` than its env.
  const sandboxProcess = Object.create(process, {
    env: { value: { ...env, ROUTER_CONFIG_FILE: path.resolve(configFile) } },
  }) as NodeJS.Process;
  evaluate(sandboxRequire, module, module.exports, root, sandboxProcess);
  return module.exports.apps ?? [];
}

/** The role of an app, from its script (dist/services/<role>/main.js). */
function roleOf(app: EcosystemApp): ProcessRole {
  const role = /services\/([a-z-]+)\/main\.js$/.exec(app.script)?.[1];
  if (role === undefined || !isProcessRole(role)) {
    throw new Error(`ops-prometheus: app ${app.name} runs ${app.script}, which has no metrics port rule`);
  }
  return role;
}

/** Per app, its targets: one per PM2 instance (NODE_APP_INSTANCE 0..instances-1). */
export function scrapeGroups(config: RouterConfig, apps: readonly EcosystemApp[], address: string): ScrapeGroup[] {
  const host = address.includes(":") ? `[${address}]` : address;
  return apps.map((app) => {
    const role = roleOf(app);
    // A poller of several chains (CHAIN_ID "56,137") serves on its first chain's port (process-observability.ts).
    const chainId = app.env?.CHAIN_ID === undefined ? undefined : Number(app.env.CHAIN_ID.split(",")[0]);
    const instances = Array.from({ length: app.instances ?? 1 }, (_, i) => i);
    return { app: app.name, targets: instances.map((i) => `${host}:${metricsPortFor(config, role, chainId, i)}`) };
  });
}

/** Where Prometheus reaches a process bound to metricsHost when no --host is given. */
export function defaultAddress(config: RouterConfig): string {
  return config.metricsHost === "0.0.0.0" || config.metricsHost === "::" ? "127.0.0.1" : config.metricsHost;
}

export const DEFAULT_RULE_FILE = "router-alerts.rules.yml";

export function renderPrometheusConfig(
  source: string,
  groups: readonly ScrapeGroup[],
  ruleFile = DEFAULT_RULE_FILE,
): string {
  const lines = [
    `# Generated by \`npm run ops:prometheus -- ${source}\` (scripts/ops-prometheus.ts); regenerate, never edit:`,
    "# the targets are the metrics ports of exactly the processes ecosystem.config.js starts for that config",
    '# (docs/operating.md "Metrics"). Series carry their own role, chain and pm2_instance labels; `app` names the',
    "# PM2 app of a target, so an `up == 0` alert says which process is down.",
    "global:",
    "  scrape_interval: 15s",
    "rule_files:",
    `  - ${ruleFile}`,
    "scrape_configs:",
    "  - job_name: router",
    "    static_configs:",
  ];
  for (const group of groups) {
    lines.push(`      - targets: [${group.targets.map((t) => JSON.stringify(t)).join(", ")}]`);
    lines.push(`        labels: { app: ${JSON.stringify(group.app)} }`);
  }
  return `${lines.join("\n")}\n`;
}

/** The whole scrape config for a config file: one group per app per host. */
export function prometheusConfigFor(
  configFile: string,
  hosts: readonly HostSelection[],
  env: NodeJS.ProcessEnv,
  source = configFile,
  ruleFile = DEFAULT_RULE_FILE,
): string {
  const { config } = loadConfigFile(configFile, env);
  const selections = hosts.length > 0 ? hosts : [{ address: defaultAddress(config) }];
  const groups = selections.flatMap((host) =>
    scrapeGroups(
      config,
      ecosystemApps(configFile, host.roles === undefined ? env : { ...env, ROUTER_ROLES: host.roles }),
      host.address,
    ),
  );
  return renderPrometheusConfig(source, groups, ruleFile);
}

function parseArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): { file: string; source: string; hosts: HostSelection[]; ruleFile: string } {
  const hosts: HostSelection[] = [];
  let file: string | undefined;
  let ruleFile = DEFAULT_RULE_FILE;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--host") {
      const value = argv[++i];
      if (value === undefined || value === "") {
        throw new UsageError("--host needs <address> or <address>=<ROUTER_ROLES>");
      }
      const at = value.indexOf("=");
      hosts.push(at < 0 ? { address: value } : { address: value.slice(0, at), roles: value.slice(at + 1) });
    } else if (arg === "--rule-file") {
      const value = argv[++i];
      if (value === undefined || value === "") {
        throw new UsageError("--rule-file needs a path");
      }
      ruleFile = value;
    } else if (arg.startsWith("--")) {
      throw new UsageError(`unknown option ${arg}`);
    } else if (file === undefined) {
      file = arg;
    } else {
      throw new UsageError(`one config file only, got ${file} and ${arg}`);
    }
  }
  return { file: file ?? configFilePath(env), source: file ?? "", hosts, ruleFile };
}

class UsageError extends Error {}

function main(argv: readonly string[], env: NodeJS.ProcessEnv): number {
  try {
    const { file, source, hosts, ruleFile } = parseArgs(argv, env);
    process.stdout.write(
      prometheusConfigFor(file, hosts, env, [source, ...argv.filter((a) => a !== source)].join(" ").trim(), ruleFile),
    );
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`config invalid (${err.problems.length} problem(s))\n`);
      for (const problem of err.problems) {
        process.stderr.write(`  ${problem}\n`);
      }
      return 1;
    }
    if (err instanceof UsageError || (err instanceof Error && err.message.startsWith("ecosystem.config.js:"))) {
      process.stderr.write(`ops-prometheus: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

if (require.main === module) {
  process.exitCode = main(process.argv.slice(2), process.env);
}
