import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { MissingBinaryError } from "./errors";

/**
 * Where the local stack's programs live: anvil from the pinned npm package (a dev dependency), redis-server
 * and nats-server from Debian packages. Shared by `npm run local` and the test harness.
 */

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface FindBinaryOptions {
  /** Checked before PATH (e.g. a version pinned in node_modules). */
  readonly preferred?: readonly string[];
  /** Checked after PATH (e.g. /usr/sbin when PATH is minimal). */
  readonly fallbacks?: readonly string[];
  readonly missingHint: string;
}

/** First executable among `preferred`, then `name` on PATH, then `fallbacks`; else MissingBinaryError. */
export function findBinary(name: string, opts: FindBinaryOptions): string {
  const onPath = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => dir !== "")
    .map((dir) => join(dir, name));
  const found = [...(opts.preferred ?? []), ...onPath, ...(opts.fallbacks ?? [])].find(isExecutable);
  if (found === undefined) {
    throw new MissingBinaryError(opts.missingHint);
  }
  return found;
}

function packagedAnvil(): string[] {
  try {
    return [join(dirname(require.resolve("@foundry-rs/anvil-linux-amd64/package.json")), "bin", "anvil")];
  } catch {
    return []; // not installed: fall back to PATH
  }
}

export function anvilBinary(): string {
  // The pinned npm binary wins over any foundry install on PATH.
  return findBinary("anvil", {
    preferred: packagedAnvil(),
    missingHint: "anvil not found: npm install @foundry-rs/anvil-linux-amd64 (devDependency; npm ci installs it)",
  });
}

/** Programs that come from a Debian package of the same name, and where Debian puts them. */
export const DEBIAN_BINARIES = {
  "redis-server": { pkg: "redis-server", fallbacks: ["/usr/bin/redis-server"] },
  "nats-server": { pkg: "nats-server", fallbacks: ["/usr/sbin/nats-server", "/usr/bin/nats-server"] },
} as const;

export type DebianBinary = keyof typeof DEBIAN_BINARIES;

export function debianBinary(name: DebianBinary): string {
  const { pkg, fallbacks } = DEBIAN_BINARIES[name];
  return findBinary(name, {
    fallbacks,
    missingHint: `${name} not found: install the Debian package ${pkg} (apt-get install ${pkg})`,
  });
}

export function redisServerBinary(): string {
  return debianBinary("redis-server");
}

export function natsServerBinary(): string {
  return debianBinary("nats-server");
}

/**
 * `npm run local` only: as root, a missing package is installed with apt-get (the brief's "fresh machine"
 * case); otherwise the one-line MissingBinaryError stands. Returns the binary's path.
 */
export function ensureDebianBinary(name: DebianBinary, log: (line: string) => void): string {
  try {
    return debianBinary(name);
  } catch (err) {
    if (!(err instanceof MissingBinaryError) || process.getuid?.() !== 0) {
      throw err;
    }
  }
  const { pkg } = DEBIAN_BINARIES[name];
  log(`${name} is missing; installing the Debian package ${pkg} with apt-get (running as root)`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  let install = spawnSync("apt-get", ["install", "-y", "--no-install-recommends", pkg], { env, encoding: "utf8" });
  if (install.status !== 0) {
    // A fresh image has no package lists yet.
    spawnSync("apt-get", ["update"], { env, encoding: "utf8" });
    install = spawnSync("apt-get", ["install", "-y", "--no-install-recommends", pkg], { env, encoding: "utf8" });
  }
  if (install.status !== 0) {
    const tail = `${install.stdout ?? ""}${install.stderr ?? ""}`.trim().split("\n").slice(-5).join("\n");
    throw new MissingBinaryError(`${name} not found and apt-get install ${pkg} failed:\n${tail}`);
  }
  return debianBinary(name);
}
