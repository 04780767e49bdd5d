import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  asClusterOwner,
  createPostgresDatabase,
  giveToClusterOwner,
  initPostgresCluster,
  localPostgresUrl,
  postgresAnswers,
  postgresArgs,
  postgresBinDir,
  stopPostgresCluster,
} from "../../scripts/local/postgres";
import { startOnFreePort } from "./child-process";

export interface PostgresServer {
  readonly port: number;
  /** postgres://router@127.0.0.1:port/postgres (trust authentication, loopback only). */
  readonly url: string;
  /** A fresh empty database on this cluster; returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Fast shutdown, then the temp directory is removed. Idempotent. */
  stop(): Promise<void>;
}

let databaseCounter = 0;

/**
 * A throwaway PostgreSQL cluster of the test's own: initdb in a temp directory, postgres on a free loopback
 * port with its socket in that directory (never the machine's PostgreSQL on 5432). As root, both run as the
 * `postgres` OS user (PostgreSQL refuses root). About a second on a 2-core machine, mostly initdb.
 */
export async function startPostgres(): Promise<PostgresServer> {
  const binDir = postgresBinDir();
  const dir = mkdtempSync(join(tmpdir(), "router-pg-"));
  const dataDir = join(dir, "data");
  mkdirSync(dataDir, { mode: 0o700 });
  giveToClusterOwner(dir);
  try {
    initPostgresCluster(binDir, dataDir);
    const launch = (port: number) => asClusterOwner(join(binDir, "postgres"), postgresArgs(dataDir, port));
    const { proc, port } = await startOnFreePort({
      name: "postgres",
      command: launch(0).command,
      args: (p) => launch(p).args,
      probe: postgresAnswers,
      timeoutMs: 20_000,
    });
    let stopped: Promise<void> | undefined;
    return {
      port,
      url: localPostgresUrl(port),
      createDatabase: (name) => createPostgresDatabase(port, `${name}_${process.pid}_${++databaseCounter}`),
      stop: () => {
        stopped ??= (async () => {
          stopPostgresCluster(binDir, dataDir);
          await proc.stop();
          rmSync(dir, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** What usePostgres gives a test file: its cluster, there once beforeAll has run. */
export interface PostgresSuite {
  readonly server: PostgresServer;
}

/** A PostgreSQL cluster of the test file's own: started in beforeAll, stopped in afterAll. */
export function usePostgres(): PostgresSuite {
  let server: PostgresServer | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get server() {
      if (server === undefined) throw new Error("usePostgres: server is read before beforeAll ran");
      return server;
    },
  };
}
