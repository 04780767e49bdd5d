import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeTmLogs, isTransferEvent, type TmEvent } from "../../shared/chain/tm-log-decoder";
import type { TransactionData } from "../../shared/protocol/types";
import { anvilProvider } from "./anvil";

/**
 * A stand-in for the NXTP v1-runtime subgraph of one chain (docs/protocol.md#subgraph):
 * on every request it rebuilds the Transaction and AssetBalance entities from the chain's TransactionManager
 * logs and answers the router's and the real SDK's queries by operation name. Ids and addresses lowercase,
 * numbers as strings, `{"data": ...}` replies. `setLag(n)` makes it index only up to head − n (and report that
 * block in _meta).
 */
export interface SubgraphServer {
  readonly url: string;
  setLag(blocks: number): void;
  /** Answer every request with HTTP 500 while true. */
  setFailing(failing: boolean): void;
  /** Operation names received so far. */
  operations(): readonly string[];
  /** Messages of the requests answered with an error (not counting setFailing), for failure reports. */
  errors(): readonly string[];
  stop(): Promise<void>;
}

export interface StartSubgraphServerParams {
  readonly rpcUrl: string;
  readonly chainId: number;
  readonly transactionManager: string;
  readonly lagBlocks?: number;
}

type Entity = Record<string, unknown> & { id: string; status: string; router: { id: string }; user: { id: string } };

interface Indexed {
  readonly block: number;
  readonly transactions: Map<string, Entity>;
  readonly balances: Map<string, { amount: bigint; assetId: string; router: string }>;
}

export async function startSubgraphServer(params: StartSubgraphServerParams): Promise<SubgraphServer> {
  const provider = anvilProvider(params.rpcUrl, params.chainId);
  const timestamps = new Map<number, number>();
  let lag = params.lagBlocks ?? 0;
  let failing = false;
  const ops: string[] = [];
  const errors: string[] = [];

  const index = async (): Promise<Indexed> => {
    const block = Math.max(0, (await provider.getBlockNumber()) - lag);
    const logs = await provider.getLogs({ address: params.transactionManager, fromBlock: 0, toBlock: block });
    const state: Indexed = { block, transactions: new Map(), balances: new Map() };
    const { events, undecodable } = decodeTmLogs(logs);
    if (undecodable.length > 0) {
      // A stand-in fed only by the real contract: a log it cannot read is a harness bug, reported as an error reply.
      throw new Error(`undecodable TransactionManager logs: ${JSON.stringify(undecodable)}`);
    }
    for (const event of events) {
      let ts = timestamps.get(event.blockNumber);
      if (ts === undefined) {
        ts = (await provider.getBlock(event.blockNumber))?.timestamp ?? 0;
        timestamps.set(event.blockNumber, ts);
      }
      apply(state, params.chainId, event, ts);
    }
    return state;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = JSON.parse(await readBody(req)) as { query?: string; variables?: Record<string, unknown> };
    const query = body.query ?? "";
    const op = /query\s+(\w+)/.exec(query)?.[1] ?? (query.includes("_meta") ? "GetBlockNumber" : "?");
    ops.push(op);
    if (failing) {
      reply(res, 500, { errors: [{ message: "failing on purpose" }] });
      return;
    }
    const data = answer(op, body.variables ?? {}, await index());
    reply(res, 200, data === undefined ? { errors: [{ message: `unknown operation ${op}` }] } : { data });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      errors.push(String(err));
      reply(res, 500, { errors: [{ message: String(err) }] });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/subgraphs/name/connext/nxtp`,
    setLag: (blocks) => {
      lag = blocks;
    },
    setFailing: (value) => {
      failing = value;
    },
    operations: () => ops,
    errors: () => errors,
    stop: async () => {
      provider.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function apply(state: Indexed, chainId: number, event: TmEvent, timestamp: number): void {
  if (!isTransferEvent(event)) {
    const sign = event.kind === "liquidityAdded" ? 1n : -1n;
    addBalance(state, event.router, event.assetId, sign * BigInt(event.amount));
    return;
  }
  const tx = event.txData;
  const amount = BigInt(tx.amount);
  if (event.kind === "prepared") {
    const entity = txEntity(tx, chainId);
    Object.assign(entity, {
      status: "Prepared",
      preparedTimestamp: String(timestamp),
      encryptedCallData: event.encryptedCallData,
      encodedBid: event.encodedBid,
      bidSignature: event.bidSignature,
      prepareCaller: lower(event.caller),
      prepareTransactionHash: event.transactionHash,
    });
    state.transactions.set(entity.id, entity);
    if (tx.receivingChainId === chainId) {
      addBalance(state, entity.router.id, tx.receivingAssetId, -amount);
    }
    return;
  }
  const entity = state.transactions.get(txEntity(tx, chainId).id);
  if (!entity) return;
  const sending = tx.sendingChainId === chainId;
  if (event.kind === "fulfilled") {
    Object.assign(entity, {
      status: "Fulfilled",
      relayerFee: event.relayerFee,
      signature: event.signature,
      callData: event.callData,
      fulfillCaller: lower(event.caller),
      fulfillTransactionHash: event.transactionHash,
    });
    if (sending) addBalance(state, entity.router.id, tx.sendingAssetId, amount);
  } else {
    Object.assign(entity, {
      status: "Cancelled",
      cancelCaller: lower(event.caller),
      cancelTransactionHash: event.transactionHash,
    });
    if (!sending) addBalance(state, entity.router.id, tx.receivingAssetId, amount);
  }
}

function txEntity(tx: TransactionData, chainId: number): Entity {
  const s = (field: keyof TransactionData): string => lower(tx[field]);
  const user = s("user");
  const router = s("router");
  return {
    id: `${s("transactionId")}-${user}-${router}`,
    status: "Prepared",
    chainId: String(chainId),
    user: { id: user },
    router: { id: router },
    ...Object.fromEntries(
      [
        "initiator",
        "receivingChainTxManagerAddress",
        "sendingAssetId",
        "receivingAssetId",
        "sendingChainFallback",
        "receivingAddress",
        "callTo",
        "callDataHash",
        "transactionId",
      ].map((f) => [f, s(f as keyof TransactionData)]),
    ),
    ...Object.fromEntries(
      ["sendingChainId", "receivingChainId", "amount", "expiry", "preparedBlockNumber"].map((f) => [
        f,
        s(f as keyof TransactionData),
      ]),
    ),
    relayerFee: null,
    signature: null,
    callData: null,
    fulfillCaller: null,
    cancelCaller: null,
    fulfillTransactionHash: null,
    cancelTransactionHash: null,
  };
}

function addBalance(state: Indexed, router: string, assetId: string, delta: bigint): void {
  const id = `${assetId.toLowerCase()}-${router.toLowerCase()}`;
  const current = state.balances.get(id) ?? {
    amount: 0n,
    assetId: assetId.toLowerCase(),
    router: router.toLowerCase(),
  };
  state.balances.set(id, { ...current, amount: current.amount + delta });
}

function answer(op: string, v: Record<string, unknown>, state: Indexed): unknown {
  const all = [...state.transactions.values()];
  const str = (key: string): string | undefined =>
    v[key] === undefined || v[key] === null ? undefined : String(v[key]).toLowerCase();
  const routerId = str("routerId");
  const page = (list: Entity[]): Entity[] => {
    const sorted = list.sort((a, b) => Number(b.preparedBlockNumber) - Number(a.preparedBlockNumber));
    const skip = Number(v.skip ?? 0);
    return sorted.slice(skip, v.first === undefined ? undefined : skip + Number(v.first));
  };
  const ofRouter = (filter: (t: Entity) => boolean): unknown => {
    const known =
      all.some((t) => t.router.id === routerId) || [...state.balances.values()].some((b) => b.router === routerId);
    return { router: known ? { transactions: page(all.filter((t) => t.router.id === routerId && filter(t))) } : null };
  };
  const statusOk = (t: Entity): boolean => str("status") === undefined || t.status.toLowerCase() === str("status");
  const ids = ((v.transactionIds as string[] | undefined) ?? []).map((id) => id.toLowerCase());
  // The SDK 0.1.42 asks by user and gets a flat `transactions` list; the router asks by routerId.
  const userId = str("userId");
  if (userId !== undefined) {
    const ofUser = all.filter((t) => t.user.id === userId);
    switch (op) {
      case "GetSenderTransactions":
        return { transactions: page(ofUser.filter((t) => statusOk(t) && t.sendingChainId === str("sendingChainId"))) };
      case "GetReceiverTransactions":
        return {
          transactions: page(ofUser.filter((t) => statusOk(t) && t.receivingChainId === str("receivingChainId"))),
        };
      case "GetTransactionsWithUser":
        return { transactions: ofUser.filter((t) => ids.includes(String(t.transactionId))) };
      default:
        return undefined;
    }
  }
  switch (op) {
    case "GetBlockNumber":
      return { _meta: { block: { number: state.block } } };
    case "GetSenderTransactions":
      return ofRouter((t) => statusOk(t) && t.sendingChainId === str("sendingChainId"));
    case "GetReceiverTransactions":
      return ofRouter(
        (t) =>
          statusOk(t) &&
          t.receivingChainId === str("receivingChainId") &&
          BigInt(String(t.expiry)) < BigInt(String(v.expiry_lt)),
      );
    case "GetTransactionsWithRouter":
      return { transactions: all.filter((t) => ids.includes(String(t.transactionId)) && t.router.id === routerId) };
    case "GetTransactions":
      return { transactions: all.filter((t) => ids.includes(String(t.transactionId))) };
    case "GetTransaction":
      return { transaction: state.transactions.get(str("transactionId") ?? "") ?? null };
    case "GetAssetBalance": {
      const balance = state.balances.get(str("assetBalanceId") ?? "");
      return { assetBalance: balance ? { amount: balance.amount.toString() } : null };
    }
    case "GetAssetBalances":
      return {
        assetBalances: [...state.balances.values()]
          .filter((b) => b.router === routerId)
          .map((b) => ({ amount: b.amount.toString(), assetId: b.assetId })),
      };
    default:
      return undefined;
  }
}

function lower(value: unknown): string {
  return String(value).toLowerCase();
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
