import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { toQuantity } from "ethers";

/**
 * A JSON-RPC provider in front of an anvil node that the fault tests can break: `down()` closes it (the next
 * connection is refused, open ones are cut), `lagBehind(n)` makes it a provider stuck n blocks behind (its
 * eth_blockNumber and "latest" block stay at the head it had then; with `hideNewer`, as a node that has not
 * synced them, it also answers null for the blocks above that head) until `catchUp()`, `estimateGasAt(tag)` makes it a provider
 * whose eth_estimateGas runs against `tag` whatever the caller asked (not every RPC estimates against pending),
 * `callAt(tag)` the same for eth_call (a "pending" read answered from a node whose mempool has not got a transaction),
 * `slow(method, ms)` answers that method `ms` later (a distant public RPC), `fail(method, on)` answers any
 * request or batch with that method HTTP 503 (an outage of that call), and `maxInFlight(method)` tells how many of
 * its requests were ever open at once. `hideReceipts(true)` answers every eth_getTransactionReceipt `null` while
 * the transaction count moves on: a load-balanced endpoint whose receipt backend lags.
 */
export interface RpcProxy {
  readonly url: string;
  /** Requests served so far. */
  requests(): number;
  lagBehind(blocks: number, opts?: { readonly hideNewer?: boolean }): Promise<void>;
  /** Ends `lagBehind`: the proxy answers as its node again. */
  catchUp(): void;
  estimateGasAt(tag: string): void;
  callAt(tag: string | undefined): void;
  slow(method: string, ms: number): void;
  fail(method: string, on: boolean): void;
  hideReceipts(hidden: boolean): void;
  /** Requests of `method` counted so far, and the most that were open at once. */
  calls(method: string): { readonly total: number; readonly maxInFlight: number };
  down(): Promise<void>;
}

interface RpcRequest {
  readonly id?: unknown;
  readonly method?: string;
  readonly params?: unknown[];
}

async function body(req: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) text += String(chunk);
  return text;
}

export async function startRpcProxy(targetUrl: string): Promise<RpcProxy> {
  let served = 0;
  let frozenHead: number | undefined;
  let hideNewer = false;
  let estimateTag: string | undefined;
  let callTag: string | undefined;
  let receiptsHidden = false;
  const delays = new Map<string, number>();
  const failing = new Set<string>();
  const counts = new Map<string, { total: number; inFlight: number; maxInFlight: number }>();
  const sockets = new Set<Socket>();
  const forward = async (payload: unknown): Promise<unknown> => {
    const res = await fetch(targetUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(payload),
    });
    return res.json();
  };
  const answer = async (r: RpcRequest): Promise<unknown> => {
    const method = r.method ?? "";
    const count = counts.get(method) ?? { total: 0, inFlight: 0, maxInFlight: 0 };
    counts.set(method, count);
    count.total += 1;
    count.inFlight += 1;
    count.maxInFlight = Math.max(count.maxInFlight, count.inFlight);
    try {
      const delayMs = delays.get(method);
      if (delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return await answerNow(r);
    } finally {
      count.inFlight -= 1;
    }
  };
  const answerNow = async (r: RpcRequest): Promise<unknown> => {
    if (receiptsHidden && r.method === "eth_getTransactionReceipt") {
      return { jsonrpc: "2.0", id: r.id, result: null };
    }
    if (estimateTag !== undefined && r.method === "eth_estimateGas") {
      return forward({ ...r, params: [r.params?.[0], estimateTag] });
    }
    if (callTag !== undefined && r.method === "eth_call") {
      return forward({ ...r, params: [r.params?.[0], callTag] });
    }
    if (frozenHead !== undefined) {
      if (r.method === "eth_blockNumber") return { jsonrpc: "2.0", id: r.id, result: toQuantity(frozenHead) };
      if (r.method === "eth_getBlockByNumber" && r.params?.[0] === "latest")
        return forward({ ...r, params: [toQuantity(frozenHead), ...(r.params ?? []).slice(1)] });
      const tag = r.params?.[0];
      if (hideNewer && r.method === "eth_getBlockByNumber" && typeof tag === "string" && tag.startsWith("0x")) {
        if (Number(BigInt(tag)) > frozenHead) return { jsonrpc: "2.0", id: r.id, result: null };
      }
    }
    return forward(r);
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      served += 1;
      try {
        const parsed = JSON.parse(await body(req)) as RpcRequest | RpcRequest[];
        if ((Array.isArray(parsed) ? parsed : [parsed]).some((r) => failing.has(r.method ?? ""))) {
          res.writeHead(503);
          res.end("outage");
          return;
        }
        const reply = Array.isArray(parsed) ? await Promise.all(parsed.map(answer)) : await answer(parsed);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(reply));
      } catch (err) {
        res.writeHead(502);
        res.end(String(err));
      }
    })();
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests: () => served,
    lagBehind: async (blocks, opts) => {
      hideNewer = opts?.hideNewer === true;
      const head = Number(
        BigInt(
          ((await forward({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] })) as { result: string })
            .result,
        ),
      );
      frozenHead = Math.max(0, head - blocks);
    },
    catchUp: () => {
      frozenHead = undefined;
      hideNewer = false;
    },
    estimateGasAt: (tag) => {
      estimateTag = tag;
    },
    callAt: (tag) => {
      callTag = tag;
    },
    slow: (method, ms) => {
      delays.set(method, ms);
    },
    fail: (method, on) => {
      if (on) failing.add(method);
      else failing.delete(method);
    },
    hideReceipts: (hidden) => {
      receiptsHidden = hidden;
    },
    calls: (method) => {
      const count = counts.get(method);
      return { total: count?.total ?? 0, maxInFlight: count?.maxInFlight ?? 0 };
    },
    down: async () => {
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
