import { natsServerBinary } from "../../scripts/local/binaries";
import { natsAnswers, natsArgs } from "../../scripts/local/probes";
import { startOnFreePort } from "./child-process";

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
