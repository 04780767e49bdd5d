import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { loadConfig } from "../../shared/config";
import { createLedgerPool, type LedgerPool } from "../../shared/ledger/database";
import { migrateLedger } from "../../shared/ledger/migrations";
import { readSwapRows } from "../../shared/ledger/swap-reads";
import { createLogger } from "../../shared/logging/create-logger";
import { swapViewOf } from "../../shared/protocol/ledger";
import { createApp } from "../../services/admin/app";
import { closeServer, listen } from "../../services/admin/listen";
import type { AdminOperations } from "../../services/admin/types";
import { bookRows, type EventRow } from "../../shared/ledger/ledger-writer";
import { usePostgres } from "../harness/postgres";
import { DAI, SWAP_ID, USDC, signerTransactionRow, swapEventRow } from "./ledger-rows";
import { validConfig } from "../unit/config-fixtures";

const logger = createLogger({ level: "silent", service: "admin" });
const TOKEN = "a-long-enough-admin-token-for-tests";
const SIGNER = "0x9100000000000000000000000000000000000001";
const ID = SWAP_ID;
const refused = async (): Promise<never> => {
  throw new Error("not used by this test");
};
const operations: AdminOperations = { removeLiquidity: refused, cancelSender: refused } as never;

/** A claimed swap of 100 USDC (6 decimals) on 1337 for 99.9 DAI (18 decimals) on 1338, as the ledger books it. */
function swapEvent(side: "sending" | "receiving", event: EventRow["event"], logIndex: number): EventRow {
  const sending = side === "sending";
  const amount = sending ? "100000000" : "99900000000000000000";
  return swapEventRow({
    side,
    event,
    n: logIndex,
    router: SIGNER,
    blockTime: 1_764_000_000 + logIndex,
    expiry: 1_764_100_000,
    amount,
    relayerFee: "0",
    usd: { price: "1", amount: sending ? "100" : "99.9", relayerFee: "0" },
  });
}

describe("GET /ledger/<transactionId> (real PostgreSQL, read-only pool)", () => {
  const pg = usePostgres();
  let reader: LedgerPool;
  let writer: LedgerPool;
  let server: Server;
  let offServer: Server;
  const url = (s: Server, path: string): string => `http://127.0.0.1:${(s.address() as AddressInfo).port}${path}`;
  const get = (s: Server, path: string, token: string | undefined = TOKEN) =>
    fetch(url(s, path), { headers: token ? { authorization: `Bearer ${token}` } : {} });

  beforeAll(async () => {
    const databaseUrl = await pg.server.createDatabase("ledger_route");
    const { config } = loadConfig({ ...validConfig(), ledger: { databaseUrl } }, {});
    const ledger = config.ledger;
    if (!ledger) throw new Error("no ledger config");
    writer = createLedgerPool({ ledger, logger, mode: "writer", service: "ledger" });
    reader = createLedgerPool({ ledger, logger, mode: "reader", service: "admin" });
    await migrateLedger(writer, logger);
    await bookRows(writer, {
      transaction: signerTransactionRow({
        chainId: 1338,
        hash: `0x${"aa".repeat(32)}`,
        kind: "prepare",
        from: SIGNER,
        blockNumber: 11,
        blockHash: `0x${"bb".repeat(32)}`,
        blockTime: 1_764_000_001,
        gasUsed: 100_000n,
        effectiveGasPrice: 1_000_000_000n,
        l1FeeWei: 5n,
      }),
      events: [
        swapEvent("sending", "prepared", 1),
        swapEvent("receiving", "prepared", 2),
        swapEvent("receiving", "fulfilled", 3),
        swapEvent("sending", "fulfilled", 4),
      ],
    });
    const readSwap = async (id: string) =>
      swapViewOf({ transactionId: id, signer: SIGNER, ...(await readSwapRows(reader, id)) });
    server = await listen(
      createApp({ config, logger, signerAddress: SIGNER, operations, ledger: readSwap }),
      "127.0.0.1",
      0,
    );
    const off = loadConfig(validConfig(), {}).config;
    offServer = await listen(createApp({ config: off, logger, signerAddress: SIGNER, operations }), "127.0.0.1", 0);
  });

  afterAll(async () => {
    await closeServer(server);
    await closeServer(offServer);
    await reader.end();
    await writer.end();
  });

  it("answers the booked swap: amounts, status, transactions and fee normalised from 6 to 18 decimals", async () => {
    const res = await get(server, `/ledger/${ID}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      transactionId: ID,
      user: "0x5256000000000000000000000000000000005baa",
      sendingChainId: 1337,
      sendingAssetId: USDC,
      receivingChainId: 1338,
      receivingAssetId: DAI,
      amountIn: "100000000",
      amountOut: "99900000000000000000",
      status: "claimed",
      transactions: [
        {
          chainId: 1338,
          kind: "prepare",
          hash: `0x${"aa".repeat(32)}`,
          gasUsed: "100000",
          effectiveGasPrice: "1000000000",
          l1FeeWei: "5",
          costWei: "100000000000005",
          reverted: false,
        },
      ],
      feeEarned: "100000000000000000",
      relayerFeeEarned: "0",
      usd: { feeEarned: 0.1, gasCost: null, relayerFeeEarned: 0, net: null },
    });
  });

  it("unknown id: 404 swap_not_booked; books off: 501 ledger_off; no token: 401; a bad id: 400", async () => {
    const unknown = await get(server, `/ledger/0x${"01".repeat(32)}`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toBe("swap_not_booked");
    const off = await get(offServer, `/ledger/${ID}`);
    expect(off.status).toBe(501);
    expect(((await off.json()) as { error: string }).error).toBe("ledger_off");
    expect((await get(server, `/ledger/${ID}`, "")).status).toBe(401);
    expect((await get(server, "/ledger/0x12")).status).toBe(400);
  });

  it("the admin's pool cannot write the books", async () => {
    await expect(reader.query("DELETE FROM ledger_events")).rejects.toThrow(/read-only/);
  });
});
