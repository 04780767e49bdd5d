import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The deployment files: a text check of the lines that matter (no YAML dependency just for this), and
 * `docker compose config` (or the older `docker-compose config`) when one is installed; it needs no daemon.
 */
const root = join(__dirname, "..", "..");
const compose = readFileSync(join(root, "docker-compose.yml"), "utf8");
const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");

/** The lines of one top-level service: from `  <name>:` up to the next line indented two spaces or less. */
function serviceBlock(name: string): string {
  const lines = compose.split("\n");
  const start = lines.indexOf(`  ${name}:`);
  if (start < 0) {
    throw new Error(`docker-compose.yml has no service ${name}`);
  }
  const body: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.trim() !== "" && !line.startsWith("   ")) {
      break;
    }
    body.push(line);
  }
  return body.filter((l) => !l.trim().startsWith("#")).join("\n");
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
  it("runs Redis with append-only persistence and noeviction (BullMQ needs both)", () => {
    const redis = serviceBlock("redis");
    expect(redis).toMatch(/"--appendonly", "yes"/);
    expect(redis).toMatch(/"--maxmemory-policy", "noeviction"/);
    expect(redis).toMatch(/- redis-data:\/data/);
    expect(redis).not.toMatch(/profiles:/);
  });

  it("runs the router image with config.json read-only and the admin port on loopback only", () => {
    const router = serviceBlock("router");
    expect(router).toMatch(/^ {4}build: \.$/m);
    expect(router).toContain("- ./config.json:/app/config.json:ro");
    expect(router).toContain('- "127.0.0.1:${ROUTER_EXTERNAL_PORT:-8080}:8080"');
    expect(router).toContain("REDIS_URL: redis://redis:6379");
    expect(router).not.toMatch(/profiles:/);
    // Every published port anywhere in the file is bound to loopback.
    const published = [...compose.matchAll(/^\s+- "([^"]+)"\s*$/gm)].map((m) => m[1]).filter((p) => /:\d+$/.test(p));
    expect(published.length).toBeGreaterThan(0);
    expect(published.filter((p) => !p.startsWith("127.0.0.1:"))).toEqual([]);
  });

  it("puts NATS and the local messaging auth service behind the `local` profile", () => {
    expect(serviceBlock("nats")).toMatch(/profiles: \[local\]/);
    const auth = serviceBlock("messaging-auth");
    expect(auth).toMatch(/profiles: \[local\]/);
    expect(auth).toContain("dist/services/messaging-auth/main.js");
    expect(auth).toContain("MESSAGING_AUTH_HOST: 0.0.0.0");
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

  it("runs pm2-runtime as the unprivileged node user, with a HEALTHCHECK on /ping", () => {
    expect(finalStage).toMatch(/^USER node$/m);
    // ecosystem.config.js mkdirs ./logs at load time: it must be writable by that user.
    expect(finalStage).toMatch(/^RUN mkdir -p \/app\/logs && chown node:node \/app\/logs$/m);
    expect(finalStage).toMatch(/^HEALTHCHECK [\s\S]*\/ping/m);
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
