import { findBinary, startOnFreePort, tcpExchange } from "./child-process";

export interface NatsServer {
  /** nats://127.0.0.1:port */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

export function natsServerBinary(): string {
  return findBinary("nats-server", {
    fallbacks: ["/usr/sbin/nats-server"],
    missingHint: "nats-server not found: install the Debian package nats-server",
  });
}

/** A plain nats-server (no auth, no JetStream) on a free loopback port. */
export async function startNats(): Promise<NatsServer> {
  const { proc, port } = await startOnFreePort({
    name: "nats-server",
    command: natsServerBinary(),
    args: (p) => ["-a", "127.0.0.1", "-p", String(p)],
    // The server greets with INFO; a PONG to our PING proves it also parsed a client CONNECT.
    probe: async (p, timeoutMs) => {
      const reply = await tcpExchange({
        port: p,
        send: 'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n',
        done: (r) => r.includes("PONG\r\n") || r.includes("-ERR"),
        timeoutMs,
      });
      return reply.startsWith("INFO ") && reply.includes("PONG\r\n");
    },
  });
  return { url: `nats://127.0.0.1:${port}`, port, pid: proc.pid, stop: proc.stop };
}
