import { natsServerBinary } from "../../scripts/local/binaries";
import { natsAnswers, natsArgs } from "../../scripts/local/probes";
import { sleep } from "../../shared/timing";
import { startOnFreePort } from "./child-process";
import { getFreePort } from "./free-port";

export { natsServerBinary };

export interface NatsServer {
  /** nats://127.0.0.1:port */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** A plain nats-server (no auth, no JetStream) on a free loopback port. */
export async function startNats(): Promise<NatsServer> {
  const { proc, port } = await startOnFreePort({
    name: "nats-server",
    command: natsServerBinary(),
    args: natsArgs,
    probe: natsAnswers,
  });
  return { url: `nats://127.0.0.1:${port}`, port, pid: proc.pid, stop: proc.stop };
}

export interface NatsClusterNode extends NatsServer {
  /** SIGKILLs this server (no lame-duck mode, no goodbye to its clients or routes). */
  kill(): void;
}

export interface NatsCluster {
  readonly nodes: readonly NatsClusterNode[];
  /** Every client URL, comma-separated: the `messagingUrl` of a router using the cluster. */
  readonly messagingUrl: string;
  stop(): Promise<void>;
}

/**
 * `size` nats-servers clustered over loopback routes (each lists every other's cluster port), each with its own
 * client port; resolves once every server has a route to every other, so a queue group spans the cluster.
 */
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const clusterPorts: number[] = [];
  const monitorPorts: number[] = [];
  for (let i = 0; i < size; i += 1) {
    clusterPorts.push(await getFreePort());
    monitorPorts.push(await getFreePort());
  }
  const routes = clusterPorts.map((p) => `nats://127.0.0.1:${p}`).join(",");
  const nodes: NatsClusterNode[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)));
  };
  try {
    for (let i = 0; i < size; i += 1) {
      const { proc, port } = await startOnFreePort({
        name: `nats-cluster-${i}`,
        command: natsServerBinary(),
        args: (p) => [
          ...natsArgs(p),
          "--cluster_name",
          "router-test",
          "--cluster",
          `nats://127.0.0.1:${clusterPorts[i]}`,
          "--routes",
          routes,
          "-m",
          String(monitorPorts[i]),
        ],
        probe: natsAnswers,
      });
      nodes.push({
        url: `nats://127.0.0.1:${port}`,
        port,
        pid: proc.pid,
        stop: proc.stop,
        kill: () => process.kill(proc.pid, "SIGKILL"),
      });
    }
    await waitForRoutes(monitorPorts, size - 1);
  } catch (err) {
    await stop();
    throw err;
  }
  return { nodes, messagingUrl: nodes.map((n) => n.url).join(","), stop };
}

/** Each server's /routez (monitoring port) lists its routes; a route to itself is dropped by the server. */
async function waitForRoutes(monitorPorts: readonly number[], expected: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await Promise.all(
      monitorPorts.map(async (port) => {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/routez`, { signal: AbortSignal.timeout(2_000) });
          return ((await res.json()) as { num_routes?: number }).num_routes ?? 0;
        } catch {
          return 0;
        }
      }),
    );
    if (counts.every((c) => c >= expected)) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `nats cluster routes not established within ${timeoutMs} ms (routes per server: ${counts.join(", ")})`,
      );
    }
    await sleep(100);
  }
}
