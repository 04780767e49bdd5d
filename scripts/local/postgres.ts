import { spawnSync } from "node:child_process";
import { chownSync, existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { Client } from "pg";
import { isExecutable } from "./binaries";
import { MissingBinaryError } from "./errors";

/**
 * A throwaway PostgreSQL cluster for the tests and `npm run local`: Debian's `postgresql` binaries
 * (/usr/lib/postgresql/<version>/bin, never on PATH), a data directory of its own, TCP on one loopback port and
 * the unix socket in the data directory, so the machine's own PostgreSQL on 5432 is never touched. Durability is
 * traded for start-up speed (fsync off): these clusters hold nothing that must outlive them.
 */

/** The role and database every throwaway cluster has; trust authentication, loopback only. */
export const LOCAL_PG_USER = "router";
export const LOCAL_PG_DATABASE = "postgres";
const POSTGRES_OS_USER = "postgres";
const DEBIAN_PG_ROOT = "/usr/lib/postgresql";

/** The newest installed version's bin directory, e.g. /usr/lib/postgresql/15/bin. */
export function postgresBinDir(root: string = DEBIAN_PG_ROOT): string {
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^[0-9]+(\.[0-9]+)?$/.test(v) && isExecutable(join(root, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new MissingBinaryError(
      `initdb not found under ${root}/<version>/bin: install the Debian package postgresql (apt-get install postgresql)`,
    );
  }
  return join(root, versions[0], "bin");
}

/**
 * `npm run local` only: as root, a missing `postgresql` package is installed with apt-get (as for redis-server
 * and nats-server); otherwise the one-line MissingBinaryError stands. Returns the bin directory.
 */
export function ensurePostgresBinDir(log: (line: string) => void): string {
  try {
    return postgresBinDir();
  } catch (err) {
    if (!(err instanceof MissingBinaryError) || process.getuid?.() !== 0) throw err;
  }
  log("PostgreSQL is missing; installing the Debian package postgresql with apt-get (running as root)");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () =>
    spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "postgresql"], { env, encoding: "utf8" });
  if (install().status !== 0) {
    spawnSync("apt-get", ["update"], { env, encoding: "utf8" });
    const again = install();
    if (again.status !== 0) {
      const tail = `${again.stdout ?? ""}${again.stderr ?? ""}`.trim().split("\n").slice(-5).join("\n");
      throw new MissingBinaryError(`initdb not found and apt-get install postgresql failed:\n${tail}`);
    }
  }
  return postgresBinDir();
}

/** PostgreSQL refuses to run as root: as root, every program of the cluster runs as the `postgres` OS user. */
export function asClusterOwner(command: string, args: readonly string[]): { command: string; args: string[] } {
  return process.getuid?.() === 0
    ? { command: "/usr/sbin/runuser", args: ["-u", POSTGRES_OS_USER, "--", command, ...args] }
    : { command, args: [...args] };
}

/** As root, the cluster's directory must belong to the OS user that runs it. */
export function giveToClusterOwner(dir: string): void {
  if (process.getuid?.() !== 0) return;
  const owner = spawnSync("id", ["-u", POSTGRES_OS_USER], { encoding: "utf8" });
  const group = spawnSync("id", ["-g", POSTGRES_OS_USER], { encoding: "utf8" });
  if (owner.status !== 0 || group.status !== 0) {
    throw new MissingBinaryError(
      `running as root needs the OS user ${POSTGRES_OS_USER} (the postgresql package makes it)`,
    );
  }
  const chownTree = (path: string): void => {
    chownSync(path, Number(owner.stdout.trim()), Number(group.stdout.trim()));
    if (statSync(path).isDirectory()) {
      for (const entry of readdirSync(path)) chownTree(join(path, entry));
    }
  };
  chownTree(dir);
}

/** initdb of a new cluster in `dataDir` (which must exist, empty, owned by the cluster's owner). Throws with its output. */
export function initPostgresCluster(binDir: string, dataDir: string): void {
  const run = asClusterOwner(join(binDir, "initdb"), [
    "-D",
    dataDir,
    "-U",
    LOCAL_PG_USER,
    "--auth=trust",
    "--encoding=UTF8",
    "--locale=C",
    // No fsync of the new files: a throwaway cluster, and this is most of initdb's time.
    "--no-sync",
  ]);
  const result = spawnSync(run.command, run.args, { encoding: "utf8" });
  if (result.status !== 0) {
    const tail = `${result.stdout ?? ""}${result.stderr ?? ""}`.trim().split("\n").slice(-8).join("\n");
    throw new MissingBinaryError(`initdb ${dataDir} failed (exit ${String(result.status)}):\n${tail}`);
  }
}

/** The postgres server's command line: one loopback port, the socket in the data directory, fast and small. */
export function postgresArgs(dataDir: string, port: number): string[] {
  const settings = {
    listen_addresses: "127.0.0.1",
    port: String(port),
    unix_socket_directories: dataDir,
    fsync: "off",
    synchronous_commit: "off",
    full_page_writes: "off",
    shared_buffers: "16MB",
    max_connections: "40",
    logging_collector: "off",
    log_min_messages: "warning",
  };
  return ["-D", dataDir, ...Object.entries(settings).flatMap(([key, value]) => ["-c", `${key}=${value}`])];
}

export function localPostgresUrl(port: number, database: string = LOCAL_PG_DATABASE): string {
  return `postgres://${LOCAL_PG_USER}@127.0.0.1:${port}/${database}`;
}

/** True once the server accepts a login and answers a query (not merely a TCP connect during recovery). */
export async function postgresAnswers(port: number, timeoutMs: number): Promise<boolean> {
  const client = new Client({ connectionString: localPostgresUrl(port), connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    const result = await client.query<{ ok: number }>("SELECT 1 AS ok");
    return result.rows[0]?.ok === 1;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A new database on the cluster (names are made by the caller: letters, digits and '_' only). */
export async function createPostgresDatabase(port: number, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${JSON.stringify(name)}`);
  const client = new Client({ connectionString: localPostgresUrl(port) });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  return localPostgresUrl(port, name);
}

/** `pg_ctl stop -m fast`: open sessions are ended, not waited for (a plain SIGTERM waits for every client). */
export function stopPostgresCluster(binDir: string, dataDir: string, timeoutSeconds = 10): void {
  const run = asClusterOwner(join(binDir, "pg_ctl"), [
    "stop",
    "-D",
    dataDir,
    "-m",
    "fast",
    "-w",
    "-t",
    String(timeoutSeconds),
  ]);
  spawnSync(run.command, run.args, { encoding: "utf8" });
}
