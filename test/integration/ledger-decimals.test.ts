import { Queue } from "bullmq";
import { ZeroAddress, formatUnits, parseEther, parseUnits } from "ethers";
import { Pool } from "pg";
import { startLedger } from "../../services/ledger/start-ledger";
import { decodeTmLog, type FulfilledEvent, type PreparedEvent } from "../../shared/chain/tm-log-decoder";
import type { PnlReport } from "../../shared/ledger/pnl-reads";
import { createLogger } from "../../shared/logging/create-logger";
import type { SwapView } from "../../shared/protocol/ledger";
import { TX_JOB } from "../../shared/queues";
import { redisOptions } from "../../shared/queues/connection";
import {
  bookTransactionJobId,
  LEDGER_JOB,
  LEDGER_QUEUE_NAME,
  type BookTransactionJobData,
} from "../../shared/queues/ledger-jobs";
import { pollUntil } from "../../shared/timing";
import { liveChildPids } from "../harness/child-process";
import { nxtpContractAt, readBigInt, sendTx } from "../harness/deploy";
import { usePostgres } from "../harness/postgres";
import type { StackChain } from "../harness/stack";
import { setTokenDecimals } from "../harness/token-decimals";
import {
  RECEIVING,
  SENDING,
  keyOf,
  makeTransfer,
  receiverTxData,
  startLifecycleStack,
  startRun,
  userFulfill,
  type LifecycleStack,
} from "./lifecycle-fixture";
import { ledgerConfigOf, serveLedgerAdmin } from "./pnl-fixture";

const TOKEN = "lifecycle-test-admin-token-0123456789";
const logger = createLogger({ level: "silent", service: "ledger" });

/** The one TransactionManager event of `kind` in a receipt of `chain`. */
async function tmEventIn<K extends "prepared" | "fulfilled">(
  chain: StackChain,
  hash: string,
  kind: K,
): Promise<K extends "prepared" ? PreparedEvent : FulfilledEvent> {
  const receipt = await chain.provider.getTransactionReceipt(hash);
  const tm = chain.deployment.transactionManager.toLowerCase();
  for (const log of receipt?.logs ?? []) {
    if (log.address.toLowerCase() !== tm) continue;
    const event = decodeTmLog(log);
    if (event?.kind === kind) return event as K extends "prepared" ? PreparedEvent : FulfilledEvent;
  }
  throw new Error(`no ${kind} event in ${hash}`);
}

/**
 * A pool of a 6-decimal token on one chain and an 18-decimal one on the other (TestERC20 whose `decimals()` is
 * patched to 6, test/harness/token-decimals.ts), one real swap each way: the user prepares, the router prepares
 * the receiving side and claims the sending side through the submitter's jobs, the user fulfills; the ledger
 * process books every transaction from the chains. GET /ledger's `feeEarned` and /pnl's fee must be, to the base
 * unit, the claimed amount (sending-side fulfill event) normalised to the receiving decimals, truncating
 * (docs/accounting.md#what-counts), minus the amount locked (receiving-side prepare event).
 */
describe.each([
  {
    name: "6 → 18",
    sendingDecimals: 6,
    receivingDecimals: 18,
    // 10.000001 in; 9.995000000000000123 out: the fee keeps all 18 receiving decimals.
    amount: parseUnits("10.000001", 6),
    amountReceived: parseUnits("9.995000000000000123", 18),
  },
  {
    name: "18 → 6",
    sendingDecimals: 18,
    receivingDecimals: 6,
    // 10.000000999999999999 in: normalised to 6 decimals it is 10.000000 truncated (10.000001 rounded).
    amount: parseUnits("10.000000999999999999", 18),
    amountReceived: parseUnits("9.995", 6),
  },
])("ledger fees across decimals, $name (real swap on anvil, booked by the ledger process)", (c) => {
  const pg = usePostgres();
  let s: LifecycleStack;
  let admin: Awaited<ReturnType<typeof serveLedgerAdmin>>;
  let pool: Pool;
  let transactionId: string;
  let claimHash: string;
  let receivingPrepareHash: string;
  let claimTime: number;
  const get = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${admin.baseUrl}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as T;
  };

  beforeAll(async () => {
    s = await startLifecycleStack();
    const six = c.sendingDecimals === 6 ? s.sending : s.receiving;
    await setTokenDecimals(six, six.deployment.token, 6);
    for (const chain of [s.sending, s.receiving]) {
      const oracle = nxtpContractAt("ConnextPriceOracle", chain.deployment.priceOracle, chain.deployer);
      await sendTx(oracle, "setDirectPrice", [ZeroAddress, parseEther("2000")]);
      await sendTx(oracle, "setDirectPrice", [chain.deployment.token, parseEther("1")]);
    }

    // 1. The swap, for real: the user's prepare, the router's receiving prepare, the user's fulfill, the claim.
    const run = await startRun(s, "direct");
    const databaseUrl = await pg.server.createDatabase(`ledger_decimals_${c.sendingDecimals}_${c.receivingDecimals}`);
    const config = ledgerConfigOf(run.config, s, databaseUrl);
    const named: Array<{ chainId: number; hash: string; kind?: BookTransactionJobData["kind"] }> = [];
    try {
      const t = await makeTransfer(s, { mode: "direct", amount: c.amount, amountReceived: c.amountReceived });
      transactionId = t.txData.transactionId;
      named.push({ chainId: SENDING, hash: t.sender.prepareTransactionHash });
      const prepared = await run.finish(
        await run.add(RECEIVING, TX_JOB.prepareReceiver, { chainId: RECEIVING, sender: t.sender }, keyOf(t)),
      );
      receivingPrepareHash = prepared.transactionHash;
      named.push({ chainId: RECEIVING, hash: prepared.transactionHash, kind: "prepare" });
      const fulfilled = await userFulfill(s, await receiverTxData(s, prepared));
      named.push({ chainId: RECEIVING, hash: fulfilled.transactionHash });
      const claimed = await run.finish(
        await run.add(
          SENDING,
          TX_JOB.fulfillSender,
          {
            chainId: SENDING,
            txData: t.txData,
            signature: fulfilled.signature,
            relayerFee: "0",
            callData: "0x",
            receiverFulfillTransactionHash: fulfilled.transactionHash,
          },
          keyOf(t),
        ),
      );
      claimHash = claimed.transactionHash;
      named.push({ chainId: SENDING, hash: claimHash, kind: "fulfill" });
      const receipt = await s.sending.provider.getTransactionReceipt(claimHash);
      claimTime = (await s.sending.provider.getBlock(receipt?.blockNumber ?? 0))?.timestamp ?? 0;
    } finally {
      await run.stop();
    }

    // 2. The ledger process books them from the chains, as the producers name them.
    const queue = new Queue<BookTransactionJobData>(LEDGER_QUEUE_NAME, {
      connection: redisOptions(s.redisUrl),
      prefix: config.redisPrefix,
    });
    const ledger = await startLedger({ config, logger, env: {} });
    try {
      for (const tx of named) {
        const data: BookTransactionJobData = {
          chainId: tx.chainId,
          hash: tx.hash.toLowerCase(),
          source: tx.kind ? "submitter" : "poller",
          ...(tx.kind ? { kind: tx.kind } : {}),
        };
        await queue.add(LEDGER_JOB.bookTransaction, data, { jobId: bookTransactionJobId(tx.chainId, tx.hash) });
      }
      for (const tx of named) {
        await pollUntil(
          `${tx.hash} booked`,
          async () => (await queue.getJobState(bookTransactionJobId(tx.chainId, tx.hash))) === "completed",
          60_000,
        );
      }
    } finally {
      await ledger.stop();
      await queue.close();
    }
    admin = await serveLedgerAdmin(config, s.signerAddress);
    pool = new Pool({ connectionString: databaseUrl });
    pool.on("error", () => undefined);
  }, 240_000);

  afterAll(async () => {
    await admin?.stop();
    await pool?.end();
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("the patched token answers its decimals and still moves: the user's tokens went in, the router's came out", async () => {
    const sendingToken = s.sending.deployment.contracts.token;
    const receivingToken = s.receiving.deployment.contracts.token;
    expect(await readBigInt(sendingToken, "decimals", [])).toBe(BigInt(c.sendingDecimals));
    expect(await readBigInt(receivingToken, "decimals", [])).toBe(BigInt(c.receivingDecimals));
    // The swap's transferFrom (user's prepare) and transfer (user's fulfill) ran on the patched code.
    expect(await readBigInt(receivingToken, "balanceOf", [s.user.address])).toBe(c.amountReceived);
    const rows = await pool.query<{ chain_id: number; asset_decimals: number }>(
      "SELECT DISTINCT chain_id, asset_decimals FROM ledger_events WHERE transaction_id = $1 ORDER BY chain_id",
      [transactionId],
    );
    expect(rows.rows).toEqual([
      { chain_id: SENDING, asset_decimals: c.sendingDecimals },
      { chain_id: RECEIVING, asset_decimals: c.receivingDecimals },
    ]);
  });

  it("GET /ledger's feeEarned and /pnl's fee: claimed (sending fulfill) normalised, truncating, minus locked (receiving prepare)", async () => {
    // From the chains' own events, not from the test's inputs.
    const claim = await tmEventIn(s.sending, claimHash, "fulfilled");
    const locked = await tmEventIn(s.receiving, receivingPrepareHash, "prepared");
    const claimedAmount = BigInt(claim.txData.amount);
    const lockedAmount = BigInt(locked.txData.amount);
    expect(claimedAmount).toBe(c.amount);
    expect(lockedAmount).toBe(c.amountReceived);
    const scale = 10n ** BigInt(Math.abs(c.sendingDecimals - c.receivingDecimals));
    const normalised = c.sendingDecimals < c.receivingDecimals ? claimedAmount * scale : claimedAmount / scale; // bigint division truncates
    const fee = normalised - lockedAmount;
    expect(fee).toBeGreaterThan(0n);
    if (c.sendingDecimals > c.receivingDecimals) {
      // The truncation is material here: rounding would have booked one base unit more.
      expect(claimedAmount % scale).not.toBe(0n);
      expect(fee).toBe((claimedAmount + scale / 2n) / scale - lockedAmount - 1n);
    }

    const view = await get<SwapView>(`/ledger/${transactionId}`);
    expect(view.status).toBe("claimed");
    expect(view.amountIn).toBe(claimedAmount.toString());
    expect(view.amountOut).toBe(lockedAmount.toString());
    expect(view.feeEarned).toBe(fee.toString());
    // 1 USD per token on both chains: the fee in USD is the fee in whole receiving tokens.
    const feeUsd = Number(formatUnits(fee, c.receivingDecimals));
    expect(view.usd.feeEarned).toBeCloseTo(feeUsd, 12);

    const report = await get<PnlReport>(`/pnl?from=${claimTime}&to=${claimTime + 1}`);
    expect(report.swaps).toMatchObject({ claimed: 1 });
    expect(report.usd.feeEarned).toBeCloseTo(feeUsd, 12);
    expect(report.usd.feeEarned).toBeCloseTo(view.usd.feeEarned ?? NaN, 15);
    // In base units (npm run status's LEDGER): the same fee, exact, on the receiving chain's asset.
    expect(report.assets.filter((a) => a.feeEarned !== "0")).toEqual([
      expect.objectContaining({
        chainId: RECEIVING,
        assetId: locked.txData.receivingAssetId.toLowerCase(),
        feeEarned: fee.toString(),
        feeUnknown: 0,
      }),
    ]);
  });
});
