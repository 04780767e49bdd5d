import { connect } from "node:net";

/**
 * Readiness probes and command lines of the stack's servers, shared by `npm run local` (detached processes)
 * and the test harness (children of the test). Each probe resolves true only once the server does real work.
 */

/**
 * Opens a loopback TCP connection, optionally writes `send`, and resolves with everything received once
 * `done(received)` holds. Probes redis (PING) and nats (INFO/PONG) without client-library retries.
 */
export function tcpExchange(params: {
  port: number;
  send?: string;
  done: (received: string) => boolean;
  timeoutMs: number;
}): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let received = "";
    const socket = connect({ host: "127.0.0.1", port: params.port });
    const finish = (err: Error | null): void => {
      clearTimeout(timer);
      socket.destroy();
      if (err) {
        reject(err);
      } else {
        resolve(received);
      }
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${params.timeoutMs} ms`)), params.timeoutMs);
    socket.setEncoding("utf8");
    socket.once("error", finish);
    socket.once("connect", () => {
      if (params.send !== undefined) {
        socket.write(params.send);
      }
    });
    socket.on("data", (chunk: string) => {
      received += chunk;
      if (params.done(received)) {
        finish(null);
      }
    });
    socket.once("close", () => finish(new Error(`connection closed after ${JSON.stringify(received)}`)));
  });
}

interface JsonRpcReply {
  result?: unknown;
  error?: { code?: number; message?: string };
}

export async function jsonRpc(
  url: string,
  method: string,
  params: readonly unknown[],
  timeoutMs: number,
): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const reply = (await res.json()) as JsonRpcReply;
  if (reply.error) {
    throw new Error(`${method} failed: ${reply.error.message ?? "unknown error"} (code ${String(reply.error.code)})`);
  }
  return reply.result;
}

/** redis-server with no persistence that never evicts (BullMQ needs that), on loopback. */
export function redisArgs(port: number): string[] {
  return [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--maxmemory-policy",
    "noeviction",
    "--loglevel",
    "warning",
  ];
}

export async function redisAnswers(port: number, timeoutMs: number): Promise<boolean> {
  const reply = await tcpExchange({ port, send: "PING\r\n", done: (r) => r.includes("\r\n"), timeoutMs });
  return reply.startsWith("+PONG");
}

/** A plain nats-server (no auth, no JetStream) on loopback. */
export function natsArgs(port: number): string[] {
  return ["-a", "127.0.0.1", "-p", String(port)];
}

/** The server greets with INFO; a PONG to our PING proves it also parsed a client CONNECT. */
export async function natsAnswers(port: number, timeoutMs: number): Promise<boolean> {
  const reply = await tcpExchange({
    port,
    send: 'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n',
    done: (r) => r.includes("PONG\r\n") || r.includes("-ERR"),
    timeoutMs,
  });
  return reply.startsWith("INFO ") && reply.includes("PONG\r\n");
}

export interface AnvilModeOptions {
  /** Interval mining instead of automine. */
  readonly blockTimeSec?: number;
  /** Mine only on `mine()`. */
  readonly noMining?: boolean;
}

export function anvilArgs(port: number, chainId: number, mode: AnvilModeOptions = {}): string[] {
  return [
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--chain-id",
    String(chainId),
    "--silent",
    ...(mode.blockTimeSec !== undefined ? ["--block-time", String(mode.blockTimeSec)] : []),
    ...(mode.noMining ? ["--no-mining"] : []),
  ];
}

/** True once anvil answers eth_chainId with `chainId` (a different chain on the port is an error). */
export async function anvilAnswers(port: number, chainId: number, timeoutMs: number): Promise<boolean> {
  const answered = await jsonRpc(`http://127.0.0.1:${port}`, "eth_chainId", [], timeoutMs);
  if (typeof answered !== "string" || BigInt(answered) !== BigInt(chainId)) {
    throw new Error(`eth_chainId answered ${String(answered)}, expected ${chainId}`);
  }
  return true;
}

/**
 * Any HTTP answer (the auth service 404s on `/`) means the server accepts requests. Raw TCP with
 * `Connection: close`: a pooled keep-alive socket left behind by fetch was later reused by the next client in
 * this process after the server had closed it ("other side closed").
 */
export async function httpAnswers(port: number, timeoutMs: number): Promise<boolean> {
  const reply = await tcpExchange({
    port,
    send: "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    done: (r) => r.includes("\r\n"),
    timeoutMs,
  });
  return reply.startsWith("HTTP/1.");
}

/**
 * A probe for a server that may not listen yet, for pollUntil: a refused or failed exchange reads "not yet"
 * (false) instead of failing the wait, which is what pollUntil does with a throw.
 */
export function whileStarting(probe: () => Promise<boolean>): () => Promise<boolean> {
  return () => probe().catch(() => false);
}
