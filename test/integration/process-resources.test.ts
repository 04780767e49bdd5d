import { createServer, type Server, type Socket } from "node:net";
import { loadConfig } from "../../shared/config";
import type { RouterConfig } from "../../shared/config/types";
import {
  createProcessResources,
  type ProcessResources,
  type ProcessResourcesParams,
} from "../../shared/process/process-resources";
import { TX_JOB } from "../../shared/queues";
import { captureLogs, type LogCapture } from "../harness/logs";
import { startRedis, type RedisServer } from "../harness/redis";
import { waitFor } from "../harness/wait";

const TM_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
/**
 * The close deadline when Redis is frozen: long enough that one deadline for everything (1 s) and one per stuck
 * resource (3 s) stay seconds apart, so a loaded machine's late timers cannot blur them (at 300 ms they were 0.6 s
 * apart, and the old 1.5 s bound lay above both).
 */
const STUCK_CLOSE_TIMEOUT_MS = 1_000;

function testConfig(redisUrl: string): RouterConfig {
  const chain = { providers: ["http://127.0.0.1:1"], transactionManagerAddress: TM_ADDRESS };
  return loadConfig(
    {
      adminToken: "a".repeat(32),
      mnemonic: "test test test test test test test test test test test junk",
      chainConfig: { "1": chain, "1337": chain },
      swapPools: [],
      redisUrl,
      redisPrefix: `resources-${process.pid}-${Date.now()}`,
    },
    {},
    { deployments: new Map() },
  ).config;
}

/** Resources on `redisUrl` (service "test": their log lines are at `test.*`), with the logs they write. */
function openResources(
  redisUrl: string,
  params: Pick<ProcessResourcesParams, "redisKind" | "txQueueConnection" | "closeTimeoutMs">,
): { resources: ProcessResources; logs: LogCapture } {
  const logs = captureLogs();
  const resources = createProcessResources({
    config: testConfig(redisUrl),
    logger: logs.logger,
    service: "test",
    ...params,
  });
  return { resources, logs };
}

/** Accepts connections and never answers: a Redis that hangs (every command and QUIT wait for ever). */
async function startBlackHole(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    // Reads and discards every command (so a client's FIN is seen and its socket closes), answers none.
    socket.resume();
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${port}`,
    close: async () => {
      sockets.forEach((s) => s.destroy());
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("process resources (shared/process/process-resources.ts)", () => {
  let redis: RedisServer;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  it("hands out one client per role and one queue and provider per configured chain, then closes them all", async () => {
    const { resources, logs } = openResources(redis.url, { redisKind: "worker", txQueueConnection: "own" });
    const main = resources.redis();
    const lease = resources.redis("lease");
    expect(resources.redis("main")).toBe(main);
    expect(lease).not.toBe(main);
    const queue = resources.requireTxQueue(1337);
    expect(resources.txQueue(1337)).toBe(queue);
    expect(resources.txQueue(5)).toBeUndefined();
    expect(resources.requireProvider(1)).toBe(resources.provider(1));
    expect(() => resources.requireProvider(5)).toThrow(RangeError);
    await queue.add(TX_JOB.removeLiquidity, {} as never, { jobId: "resources-test" });
    expect(await main.ping()).toBe("PONG");
    expect(await lease.ping()).toBe("PONG");

    const closing = resources.close();
    expect(resources.close()).toBe(closing);
    await closing;

    // QUIT answered: the sockets then close on their own.
    await waitFor("both clients ended", () => main.status === "end" && lease.status === "end", 2_000);
    expect(logs.find("test.close")).toEqual([]);
    // Nothing new once closing: a late caller gets no handle instead of one that would never be closed.
    expect(resources.txQueue(1337)).toBeUndefined();
    expect(resources.provider(1)).toBeUndefined();
  });

  it("open() makes the named chains' queues and connects them before their first use; unknown chains are skipped", async () => {
    const { resources, logs } = openResources(redis.url, { redisKind: "worker", txQueueConnection: "own" });
    const main = resources.redis();
    const clientsOf = async (): Promise<number> =>
      String(await main.client("LIST"))
        .trim()
        .split("\n").length;
    const before = await clientsOf();
    // Chain 1's provider is unreachable here: its early read fails quietly, as a first use would report it.
    resources.open([1337, 1, 5]);
    // The queue of 1337 connected on its own connection, with nobody having asked for it yet.
    await waitFor(
      "the opened queue's connection",
      async () => ((await clientsOf()) > before ? true : undefined),
      5_000,
    );
    expect(resources.txQueue(5)).toBeUndefined();
    await resources.close();
    expect(logs.find("test.close")).toEqual([]);
  });

  it("auto-pipelines only the role that opts in; asking for a role with other options is refused", async () => {
    const { resources, logs } = openResources(redis.url, { redisKind: "request" });
    const bids = resources.redis("bids", { autoPipelining: true });
    expect(bids.options.enableAutoPipelining).toBe(true);
    expect(resources.redis().options.enableAutoPipelining).toBe(false);
    expect(resources.redis("bids")).toBe(bids);
    expect(() => resources.redis("bids", { autoPipelining: false })).toThrow(RangeError);
    // Commands of one turn, pipelined, each get their own reply.
    const replies = await Promise.all([
      bids.set("resources-a", "1"),
      bids.incr("resources-b"),
      bids.get("resources-a"),
    ]);
    expect(replies).toEqual(["OK", 1, "1"]);

    await resources.close();
    expect(logs.find("test.close")).toEqual([]);
  });

  it("runs every queue on the shared client (no connection of their own) and closes them with it", async () => {
    const { resources, logs } = openResources(redis.url, { redisKind: "request" });
    const main = resources.redis();
    const queue = resources.requireTxQueue(1);
    await queue.add(TX_JOB.removeLiquidity, {} as never, { jobId: "resources-shared" });
    // One connection for the client and the queue: the queue opened none of its own.
    const clientsOf = async (): Promise<number> =>
      String(await main.client("LIST"))
        .trim()
        .split("\n").length;
    const before = await clientsOf();
    await queue.getJob("resources-shared");
    expect(await clientsOf()).toBe(before);

    await resources.close();

    await waitFor("the shared client ended", () => main.status === "end", 2_000);
    expect(logs.find("test.close")).toEqual([]);
  });

  it("drops what has not closed by the deadline (a stuck Redis), and names it in one warning", async () => {
    const { resources, logs } = openResources(redis.url, {
      redisKind: "worker",
      txQueueConnection: "own",
      // Shortened (shipped 2 s) so the frozen Redis's deadline passes quickly; the drop path is the same.
      closeTimeoutMs: STUCK_CLOSE_TIMEOUT_MS,
    });
    const main = resources.redis();
    expect(await main.ping()).toBe("PONG");
    await resources.requireTxQueue(1).getJob("none");
    resources.adopt("never closes", () => new Promise(() => undefined));
    // Connected, then silent: QUIT and the queue's close wait for answers that do not come.
    process.kill(redis.pid, "SIGSTOP");
    try {
      const startedAtMs = Date.now();
      await resources.close();
      const elapsedMs = Date.now() - startedAtMs;

      const [warning, ...others] = logs.find("test.close", "did not close in time");
      expect(others).toEqual([]);
      expect(warning).toMatchObject({ level: "warn", timeoutMs: STUCK_CLOSE_TIMEOUT_MS });
      const stuck = ["never closes", "queue tx-1", "redis main"];
      expect(warning.resources).toEqual(expect.arrayContaining(stuck));
      // One deadline for everything, not one per resource: the latter would take the deadline once per stuck
      // resource, which is the bound; the seconds between leave a busy machine's late timers room.
      expect(elapsedMs).toBeGreaterThanOrEqual(STUCK_CLOSE_TIMEOUT_MS - 10);
      expect(elapsedMs).toBeLessThan(stuck.length * STUCK_CLOSE_TIMEOUT_MS);
    } finally {
      process.kill(redis.pid, "SIGCONT");
    }
    await waitFor("the stuck client dropped", () => main.status === "end", 2_000);
  });

  it("drops a client that never connected at once, without waiting out the deadline", async () => {
    const hole = await startBlackHole();
    try {
      const { resources, logs } = openResources(hole.url, { redisKind: "request", closeTimeoutMs: 5_000 });
      const main = resources.redis();
      resources.requireTxQueue(1);

      const startedAtMs = Date.now();
      await resources.close();

      // Not waiting out the deadline: nothing but the 5 s deadline could make it last that long.
      expect(Date.now() - startedAtMs).toBeLessThan(5_000);
      expect(logs.find("test.close")).toEqual([]);
      await waitFor("the unconnected client ended", () => main.status === "end", 2_000);
    } finally {
      await hole.close();
    }
  });
});
