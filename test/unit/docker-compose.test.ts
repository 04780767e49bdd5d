import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configEnvOf, loadConfig } from "../../shared/config";
import type { LoadedConfig } from "../../shared/config/types";
import { checkHealth, externalAddress, probeUrl } from "../../scripts/healthcheck";
import { prometheusConfigFor } from "../../scripts/ops-prometheus";

/**
 * The deployment files, parsed (no Docker daemon runs here) and cross-checked against the config rules: the
 * image's bind address against config.example.json's host, the published ports, the HEALTHCHECK's target, the
 * metrics ports Prometheus scrapes, the profiles. `docker compose config` runs too when a compose CLI is installed.
 */
const root = join(__dirname, "..", "..");
const composeText = readFileSync(join(root, "docker-compose.yml"), "utf8");
const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
// js-yaml is only a transitive dev dependency; its v3 safeLoad resolves the compose file's `<<` merge keys.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const yaml = require("js-yaml") as { safeLoad(text: string): unknown };

interface ComposeService {
  readonly image?: string;
  readonly build?: string;
  readonly profiles?: readonly string[];
  readonly command?: string | readonly string[];
  readonly environment?: Record<string, string>;
  readonly volumes?: readonly string[];
  readonly ports?: readonly string[];
  readonly depends_on?: Record<string, { condition: string }> | readonly string[];
  readonly healthcheck?: { disable?: boolean; test?: readonly string[] };
}

const compose = yaml.safeLoad(composeText) as {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
};

function service(name: string): ComposeService {
  const found = compose.services[name];
  if (!found) {
    throw new Error(`docker-compose.yml has no service ${name}`);
  }
  return found;
}

/** `ENV NAME=value` lines of the Dockerfile's final stage. */
function imageEnv(): Record<string, string> {
  const finalStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  return Object.fromEntries([...finalStage.matchAll(/^ENV (\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]));
}

/** A volume entry `source:target[:ro]` → { source, target }. */
function mount(entry: string): { source: string; target: string } {
  const [source, target] = entry.split(":");
  return { source, target };
}

function commandLine(s: ComposeService): string {
  return Array.isArray(s.command) ? s.command.join(" ") : String(s.command ?? "");
}

const exampleRaw = JSON.parse(readFileSync(join(root, "config.example.json"), "utf8")) as Record<string, unknown>;

/** config.example.json as the router container loads it: the image's and the compose file's environment. */
function exampleInContainer(): LoadedConfig {
  const env = { ...imageEnv(), ...service("router").environment };
  return loadConfig(exampleRaw, configEnvOf(env));
}

interface ComposeCli {
  readonly command: string;
  readonly prefix: readonly string[];
}

function findComposeCli(): ComposeCli | undefined {
  const candidates: ComposeCli[] = [
    { command: "docker", prefix: ["compose"] },
    { command: "docker-compose", prefix: [] },
  ];
  return candidates.find((c) => spawnSync(c.command, [...c.prefix, "version"], { encoding: "utf8" }).status === 0);
}

describe("docker-compose.yml", () => {
  it("runs Redis with append-only persistence and noeviction (BullMQ needs both), in no profile", () => {
    const redis = service("redis");
    expect(commandLine(redis)).toContain("--appendonly yes");
    expect(commandLine(redis)).toContain("--maxmemory-policy noeviction");
    expect(redis.volumes).toContain("redis-data:/data");
    expect(redis.profiles).toBeUndefined();
  });

  it("runs the router image with config.json read-only and the admin port on loopback only", () => {
    const router = service("router");
    expect(router.build).toBe(".");
    expect(router.profiles).toBeUndefined();
    expect(router.volumes).toContain("./config.json:/app/config.json:ro");
    expect(router.ports).toEqual(["127.0.0.1:${ROUTER_EXTERNAL_PORT:-8080}:8080"]);
    // Every published port of every service is bound to loopback.
    const published = Object.values(compose.services).flatMap((s) => s.ports ?? []);
    expect(published.length).toBeGreaterThan(0);
    expect(published.filter((p) => !p.startsWith("127.0.0.1:"))).toEqual([]);
  });

  it("config.example.json works in the container unedited: it binds the container's interface, with no warning", () => {
    // Outside a container the example binds loopback; the image replaces host and metricsHost for the container.
    expect(exampleRaw.host).toBe("127.0.0.1");
    expect(imageEnv().ROUTER_CONTAINER_HOST).toBe("0.0.0.0");
    const { config, warnings } = exampleInContainer();
    expect(config.host).toBe("0.0.0.0");
    expect(config.metricsHost).toBe("0.0.0.0");
    // REDIS_URL reaches the redis service, and replaces nothing of the example (no warning at start).
    expect(config.redisUrl).toBe("redis://redis:6379");
    expect(exampleRaw.redisUrl).toBeUndefined();
    expect(exampleRaw.redis).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it("publishes the admin API's port, and the HEALTHCHECK probes that port", () => {
    const router = service("router");
    const containerSide = Number(router.ports?.[0].split(":").pop());
    expect(router.environment?.HEALTHCHECK_PORT).toBe(String(containerSide));
    expect(exampleInContainer().config.port).toBe(containerSide);
    expect(dockerfile).toMatch(new RegExp(`^EXPOSE ${containerSide}$`, "m"));
  });

  it("monitoring profile: Prometheus scrapes the router's metrics ports, generated from config.json", () => {
    const generator = service("prometheus-config");
    const prometheus = service("prometheus");
    expect(generator.profiles).toEqual(["monitoring"]);
    expect(prometheus.profiles).toEqual(["monitoring"]);
    expect(generator.image).toBe(service("router").image);
    // The generator selects processes exactly as the router does.
    const selection = ["ROUTER_ROLES", "AUCTION_INSTANCES", "SUBMITTER_STANDBYS", "POLLER_STANDBYS"];
    for (const name of [...selection, "ROUTER_CONFIG_FILE"]) {
      expect([name, generator.environment?.[name]]).toEqual([name, service("router").environment?.[name]]);
    }
    const command = commandLine(generator);
    const out = /> (\S+)\/prometheus\.yml/.exec(command)?.[1];
    const configArg = /ops-prometheus\.js (\S+)/.exec(command)?.[1];
    const hostArg = /--host (\S+)/.exec(command)?.[1];
    const ruleArg = /--rule-file (\S+)/.exec(command)?.[1];
    expect(configArg).toBe(generator.environment?.ROUTER_CONFIG_FILE);
    expect(generator.volumes).toContain("./config.json:/app/config.json:ro");
    // Prometheus reaches the processes by the router's service name on the compose network.
    expect(hostArg).toBe("router");
    // The generator writes into the volume Prometheus reads its config file from.
    const written = generator.volumes?.map(mount).find((m) => m.target === out);
    const read = prometheus.volumes?.map(mount).find((m) => m.source === written?.source);
    expect(read).toBeDefined();
    expect(commandLine(prometheus)).toContain(`--config.file=${read?.target}/prometheus.yml`);
    expect(prometheus.depends_on).toEqual({ "prometheus-config": { condition: "service_completed_successfully" } });
    expect(dockerfile).toMatch(new RegExp(`^RUN mkdir -p .*${out}.* && chown node:node .*${out}`, "m"));
    // The alert rules are mounted where the generated config names them.
    expect(prometheus.volumes).toContain(`./ops/router-alerts.rules.yml:${ruleArg}:ro`);
    // What the generator prints for the example in the container: every process's metrics port, at `router`,
    // which the processes serve on the container's interface (metricsHost 0.0.0.0) and publish nowhere.
    const generated = prometheusConfigFor(join(root, "config.example.json"), [{ address: hostArg ?? "" }], {
      ...process.env,
      ROUTER_ROLES: "",
      AUCTION_INSTANCES: "",
      SUBMITTER_STANDBYS: "",
      POLLER_STANDBYS: "",
      POLLER_PROCESS_PER_CHAIN: "",
    });
    const targets = [...generated.matchAll(/"router:(\d+)"/g)].map((m) => Number(m[1]));
    // admin, two auctions, a submitter per swap chain (56, 137), one poller for both.
    expect(targets).toHaveLength(6);
    expect(exampleInContainer().config.metricsHost).toBe("0.0.0.0");
    const publishedContainerPorts = (service("router").ports ?? []).map((p) => Number(p.split(":").pop()));
    expect(targets.filter((t) => publishedContainerPorts.includes(t))).toEqual([]);
  });

  it("monitoring profile: Grafana with the Prometheus data source and the router's dashboard provisioned", () => {
    const grafana = service("grafana");
    expect(grafana.profiles).toEqual(["monitoring"]);
    const mounts = (grafana.volumes ?? []).map(mount);
    const provisioning = mounts.find((m) => m.target === "/etc/grafana/provisioning");
    expect(provisioning?.source).toBe("./ops/grafana/provisioning");
    const datasources = yaml.safeLoad(
      readFileSync(join(root, "ops/grafana/provisioning/datasources/prometheus.yml"), "utf8"),
    ) as { datasources: Array<{ type: string; url: string; isDefault: boolean }> };
    const prometheusPort = (service("prometheus").ports ?? [])[0].split(":").pop();
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ type: "prometheus", url: `http://prometheus:${prometheusPort}`, isDefault: true }),
    ]);
    const providers = yaml.safeLoad(
      readFileSync(join(root, "ops/grafana/provisioning/dashboards/router.yml"), "utf8"),
    ) as { providers: Array<{ type: string; options: { path: string } }> };
    const dashboardDir = providers.providers[0].options.path;
    expect(mounts).toContainEqual({
      source: "./ops/grafana/router-dashboard.json",
      target: `${dashboardDir}/router-dashboard.json`,
    });
  });

  it("signer profile: web3signer in eth1 mode with a key folder, reachable as http://web3signer:9000", () => {
    const signer = service("web3signer");
    expect(signer.profiles).toEqual(["signer"]);
    expect(signer.image).toMatch(/consensys\/web3signer/);
    const args = signer.command as readonly string[];
    expect(args[args.length - 1]).toBe("eth1");
    const keyPath = args.find((a) => a.startsWith("--key-store-path="))?.split("=")[1];
    expect(signer.volumes).toContain(`./signer:${keyPath}:ro`);
    expect(args).toContain("--http-listen-host=0.0.0.0");
    expect(args).toContain("--http-listen-port=9000");
    expect(
      args
        .find((a) => a.startsWith("--http-host-allowlist="))
        ?.split("=")[1]
        .split(","),
    ).toContain("web3signer");
    expect(signer.ports).toBeUndefined();
    // The URL the docs give is one the config accepts.
    const { config } = loadConfig({ ...exampleRaw, remoteSignerUrl: "http://web3signer:9000" }, {});
    expect(config.remoteSignerUrl).toBe("http://web3signer:9000");
  });

  it("puts NATS and the local messaging auth service behind the `local` profile", () => {
    expect(service("nats").profiles).toEqual(["local"]);
    const auth = service("messaging-auth");
    expect(auth.profiles).toEqual(["local"]);
    expect(commandLine(auth)).toContain("dist/services/messaging-auth/main.js");
    expect(auth.environment?.MESSAGING_AUTH_HOST).toBe("0.0.0.0");
    expect(auth.healthcheck?.disable).toBe(true);
  });

  it("is accepted by `docker compose config` when docker compose is installed", () => {
    const cli = findComposeCli();
    if (!cli) {
      console.log(
        "docker-compose.test: no working `docker compose` or `docker-compose` here; skipped the `config` check",
      );
      return;
    }
    const run = (...args: string[]): string => {
      const result = spawnSync(cli.command, [...cli.prefix, "-f", "docker-compose.yml", ...args, "config"], {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, ROUTER_EXTERNAL_PORT: "18080" },
      });
      expect({ status: result.status, stderr: result.stderr }).toEqual({ status: 0, stderr: expect.any(String) });
      return result.stdout;
    };
    const resolved = run();
    expect(resolved).toContain("noeviction");
    expect(resolved).toContain("127.0.0.1");
    expect(resolved).toContain("18080");
    expect(resolved).not.toMatch(/0\.0\.0\.0:18080/);
    expect(run("--profile", "local")).toMatch(/nats:2\.10/);
    expect(run("--profile", "monitoring")).toMatch(/prom\/prometheus/);
  });
});

describe("the image's HEALTHCHECK (scripts/healthcheck.ts)", () => {
  /** checkHealth against an admin stand-in answering `pong` on `host`, with config.example.json on its port. */
  async function healthWhenBoundTo(host: string): Promise<number> {
    const dir = mkdtempSync(join(tmpdir(), "healthcheck-"));
    const server = createServer((_req, res) => res.end("pong"));
    try {
      await new Promise<void>((resolve) => server.listen({ host, port: 0 }, resolve));
      const port = (server.address() as AddressInfo).port;
      const configFile = join(dir, "config.json");
      writeFileSync(configFile, JSON.stringify({ ...exampleRaw, port }));
      return await checkHealth({ ROUTER_CONFIG_FILE: configFile });
    } finally {
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("is unhealthy when the admin API answers on loopback only (what a published port cannot reach)", async () => {
    if (externalAddress() === undefined) {
      console.log("docker-compose.test: no non-loopback interface here; skipped the healthcheck probe");
      return;
    }
    expect(await healthWhenBoundTo("127.0.0.1")).toBe(1);
    expect(await healthWhenBoundTo("0.0.0.0")).toBe(0);
  });

  it("probes the first external IPv4 address, never a loopback one", () => {
    const lo = { internal: true, family: "IPv4", address: "127.0.0.1" } as const;
    const eth6 = { internal: false, family: "IPv6", address: "fd00::2" } as const;
    const eth4 = { internal: false, family: "IPv4", address: "172.18.0.3" } as const;
    const base = { netmask: "", mac: "", cidr: null };
    expect(
      externalAddress({
        lo: [{ ...base, ...lo }],
        eth0: [
          { ...base, ...eth6, scopeid: 0 },
          { ...base, ...eth4 },
        ],
      }),
    ).toBe("172.18.0.3");
    expect(externalAddress({ lo: [{ ...base, ...lo }] })).toBeUndefined();
    expect(probeUrl("fd00::2", 8080)).toBe("http://[fd00::2]:8080/ping");
  });
});

describe("Dockerfile", () => {
  const finalStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));

  it("builds on Node 22 LTS in stages and ships production dependencies only", () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:22-/m);
    expect([...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1])).toEqual([
      "${NODE_IMAGE}",
      "${NODE_IMAGE}",
      "${NODE_IMAGE}",
    ]);
    expect(dockerfile).toMatch(/^RUN npm ci --omit=dev/m);
    // node_modules in the final image come from the --omit=dev stage, never from the build stage.
    expect(finalStage).toMatch(/^COPY --from=prod-deps \/app\/node_modules/m);
    expect(finalStage).not.toMatch(/^COPY --from=build \/app\/node_modules/m);
  });

  it("runs pm2-runtime as the unprivileged node user, with a HEALTHCHECK (scripts/healthcheck.ts)", () => {
    expect(finalStage).toMatch(/^USER node$/m);
    // ecosystem.config.js mkdirs ./logs at load time: it must be writable by that user.
    expect(finalStage).toMatch(/^RUN mkdir -p \/app\/logs .*&& chown node:node \/app\/logs/m);
    expect(finalStage).toMatch(/^HEALTHCHECK .*CMD \["node", "dist\/scripts\/healthcheck\.js"\]$/m);
    expect(finalStage).toMatch(/^CMD \["node_modules\/\.bin\/pm2-runtime", "ecosystem\.config\.js"\]$/m);
  });

  it("never puts config.json (secrets) into the build context", () => {
    const ignore = readFileSync(join(root, ".dockerignore"), "utf8")
      .split("\n")
      .map((l) => l.trim());
    expect(ignore[ignore.findIndex((l) => l !== "" && !l.startsWith("#"))]).toBe("*");
    expect(ignore.filter((l) => /^!(.*\/)?config\.json$/.test(l))).toEqual([]);
  });
});
