import { getAddress, keccak256 } from "ethers";
import { errorMessage } from "../../../shared/errors";
import { routerMetrics } from "../../../shared/metrics/router-metrics";
import type { MessagingRequest, RequestHandler } from "../../../shared/messaging/types";
import { checkAuctionExpiry } from "../../../shared/protocol/auction-expiry";
import { auctionLogFields, parseAuctionPayload } from "../../../shared/protocol/auction-payload";
import { quoteAuction } from "../../../shared/protocol/auction-quote";
import { isColdRefusal, refusal, refusalLogLevel, type AuctionRefusal } from "../../../shared/protocol/auction-refusal";
import { sleep } from "../../../shared/timing";
import { encodeBidFast } from "../../../shared/protocol/bid-encoder";
import { BID_EXPIRY_SEC } from "../../../shared/protocol/expiry";
import { isSwapSupported } from "../../../shared/protocol/pools";
import type { AuctionBid, AuctionPayload } from "../../../shared/protocol/types";
import { transferKey } from "../../../shared/queues";
import { sanitizeSignatureV } from "../../../shared/signer/router-signer";
import type { BidReservations } from "../../../shared/transfers/bid-reservations";
import type { AuctionContext } from "../context";

/**
 * How long after `bidExpiry` a reservation still holds when the sending chain's poller has not pinned it yet:
 * a user may prepare right before `bidExpiry`, and the poller sees that prepare only after the sending chain's
 * confirmations. Two minutes covers most chains' confirmations; a later prepare finds the liquidity re-checked
 * on chain at the receiving prepare (and is cancelled back to the user if it is gone).
 */
export const RESERVATION_GRACE_SEC = 120;
/** Cached balances (pollers refresh them at least every 15 s while alive) older than this refuse the auction. */
export const DEFAULT_BALANCE_MAX_AGE_MS = 60_000;
/**
 * How long a request refused for cold data (isColdRefusal) is retried before the refusal stands: the SDK waits
 * 6 s for bids (DEFAULT_AUCTION_TIMEOUT of nxtp-sdk 0.1.42), so a bid sent within 4 s still reaches it.
 */
export const DEFAULT_COLD_RETRY_WINDOW_MS = 4_000;
/** Pause between those retries: a poller tick writes balances every second at the defaults. */
const COLD_RETRY_PAUSE_MS = 200;

export interface AuctionHandlerOptions {
  readonly balanceMaxAgeMs?: number;
  readonly coldRetryWindowMs?: number;
}

export interface AuctionHandlerDeps {
  readonly reservations: BidReservations;
  readonly options?: AuctionHandlerOptions;
}

/** The structured result of one auction, logged once. */
interface Outcome {
  readonly result: "bid" | "quote" | "refused";
  readonly refusal?: AuctionRefusal;
  readonly fields: Record<string, unknown>;
}

interface ChainFacts {
  readonly txManager: string;
  readonly minGasWei: bigint;
}

/**
 * `auction.request` (PROTOCOL.md §2.1, hardened): modes → payload → chains → pool → expiry window → decimals
 * → router fee and gas fee → one atomic Redis step (rate limit, balance and gas freshness, liquidity net of
 * hard holds and of unprepared bids up to their share, signer gas, then the bid's promise and rate stamp) →
 * bid, signed unless dry run → response. A refusal is logged once with its code and never answered; nothing a
 * requester sends can throw out of the handler.
 * No RPC happens here: balances come from Redis, prices, gas prices and decimals from the refreshers' cache.
 */
export function createAuctionHandler(ctx: AuctionContext, deps: AuctionHandlerDeps): RequestHandler {
  const balanceMaxAgeMs = deps.options?.balanceMaxAgeMs ?? DEFAULT_BALANCE_MAX_AGE_MS;
  const chains = new Map<number, ChainFacts>();
  for (const chain of Object.values(ctx.config.chainConfig)) {
    chains.set(chain.chainId, {
      txManager: getAddress(chain.transactionManagerAddress),
      minGasWei: BigInt(chain.minGas),
    });
  }
  const log = ctx.logger.child({ at: "auction.outcome" });
  const metrics = routerMetrics();

  const run = async (request: MessagingRequest, nowMs: number): Promise<Outcome> => {
    if (ctx.config.cleanUpMode) {
      return refused(
        "RouterInCleanUpMode",
        "cleanUpMode is on: the router finishes open transfers and takes no new ones",
      );
    }
    if (ctx.config.diagnosticMode) {
      return refused(
        "RouterInDiagnosticMode",
        "diagnosticMode is on: no lifecycle runs, so the router takes no transfers",
      );
    }
    const parsed = parseAuctionPayload(request.data);
    if (!parsed.ok) {
      return { result: "refused", refusal: parsed.refusal, fields: {} };
    }
    const { payload, amount } = parsed;
    const sending = chains.get(payload.sendingChainId);
    const receiving = chains.get(payload.receivingChainId);
    if (sending === undefined || receiving === undefined) {
      const missing = sending === undefined ? payload.sendingChainId : payload.receivingChainId;
      return refused("ProvidersNotAvailable", `chain ${missing} is not configured`);
    }
    const sendingAsset = { chainId: payload.sendingChainId, assetId: payload.sendingAssetId };
    const receivingAsset = { chainId: payload.receivingChainId, assetId: payload.receivingAssetId };
    if (!isSwapSupported(ctx.config.swapPools, sendingAsset, receivingAsset)) {
      return refused("SwapInvalid", "the sending and receiving assets are not in one swap pool");
    }
    const nowSec = Math.floor(nowMs / 1000);
    const expiryRefusal = checkAuctionExpiry({ expiry: payload.expiry, nowSec });
    if (expiryRefusal !== null) {
      return { result: "refused", refusal: expiryRefusal, fields: {} };
    }

    const inputDecimals = ctx.fees.decimals(payload.sendingChainId, payload.sendingAssetId);
    const outputDecimals = ctx.fees.decimals(payload.receivingChainId, payload.receivingAssetId);
    if (inputDecimals === undefined || outputDecimals === undefined) {
      return refused("ValueCold", "token decimals not read yet");
    }
    const sendingFee = ctx.fees.gasFeeInAsset({ ...sendingAsset, decimals: outputDecimals, method: "fulfill" });
    const receivingFee = ctx.fees.gasFeeInAsset({ ...receivingAsset, decimals: outputDecimals, method: "prepare" });
    if (sendingFee === undefined || receivingFee === undefined) {
      return refused("ValueCold", "an oracle price or gas price is missing or older than the freshness bound");
    }
    const quote = quoteAuction({ amount, inputDecimals, outputDecimals, gasFee: sendingFee + receivingFee });
    if ("code" in quote) {
      return { result: "refused", refusal: quote, fields: {} };
    }

    const bidExpiry = nowSec + BID_EXPIRY_SEC;
    const key = transferKey(payload.transactionId, payload.user);
    const commit = !payload.dryRun;
    const untilMs = (bidExpiry + RESERVATION_GRACE_SEC) * 1000;
    let reserved;
    try {
      reserved = await deps.reservations.reserve({
        ...payload,
        transferKey: key,
        amount: quote.amountReceived,
        nowMs,
        untilMs,
        maxAgeMs: balanceMaxAgeMs,
        rateLimitMs: ctx.config.requestLimit,
        minGasSending: sending.minGasWei,
        minGasReceiving: receiving.minGasWei,
        commit,
      });
    } catch (err) {
      return refused("StoreUnavailable", `redis: ${errorMessage(err)}`);
    }
    if (reserved.code !== "ok") {
      return refused(reserved.code, reserved.detail);
    }

    const bid = buildBid(payload, {
      router: ctx.routerAddress,
      amountReceived: quote.amountReceived.toString(),
      sendingChainTxManagerAddress: sending.txManager,
      receivingChainTxManagerAddress: receiving.txManager,
      bidExpiry,
    });
    let bidSignature: string | null = null;
    if (commit) {
      try {
        const digest = keccak256(Buffer.from(encodeBidFast(bid).slice(2), "hex"));
        bidSignature = sanitizeSignatureV(await ctx.signer.signMessage(Buffer.from(digest.slice(2), "hex")));
      } catch (err) {
        // The bid is never sent: its promise must not hold liquidity until it lapses. Only this bid goes: the
        // transfer's earlier bids were sent and stay promised.
        await deps.reservations
          .withdraw({ ...payload, transferKey: key, amount: quote.amountReceived, untilMs })
          .catch(() => undefined);
        return refused("SignerUnavailable", errorMessage(err));
      }
    }
    ctx.messaging.respond(request, { bid, bidSignature, gasFeeInReceivingToken: quote.gasFee.toString() });
    return {
      result: commit ? "bid" : "quote",
      fields: { amountReceived: bid.amountReceived, gasFee: quote.gasFee.toString(), bidExpiry },
    };
  };

  const coldRetryWindowMs = deps.options?.coldRetryWindowMs ?? DEFAULT_COLD_RETRY_WINDOW_MS;
  const attempt = async (request: MessagingRequest, nowMs: number): Promise<Outcome> => {
    try {
      return await run(request, nowMs);
    } catch (err) {
      return refused("InternalError", errorMessage(err));
    }
  };

  return async (request) => {
    const startedAtMs = ctx.nowMs();
    const retryUntilMs = Date.now() + coldRetryWindowMs - COLD_RETRY_PAUSE_MS; // real time: tests may fix nowMs
    let outcome = await attempt(request, startedAtMs);
    // A refusal for data not there yet (e.g. right after start, before the pollers' first balances) is retried
    // while the requester still listens: a refusal is never answered, so a silent one is a lost swap.
    let coldRetries = 0;
    while (outcome.refusal !== undefined && isColdRefusal(outcome.refusal.code) && Date.now() < retryUntilMs) {
      if (coldRetries === 0) {
        ctx.logger.debug("auction waiting for cold data", {
          at: "auction.cold",
          ...auctionLogFields(request.data),
          code: outcome.refusal.code,
          detail: outcome.refusal.detail,
        });
      }
      await sleep(COLD_RETRY_PAUSE_MS);
      coldRetries += 1;
      outcome = await attempt(request, ctx.nowMs());
    }
    const fields = {
      ...auctionLogFields(request.data),
      from: request.from,
      result: outcome.result,
      code: outcome.refusal?.code ?? "ok",
      ...(outcome.refusal ? { detail: outcome.refusal.detail } : {}),
      ...outcome.fields,
      ...(coldRetries > 0 ? { coldRetries } : {}),
      durationMs: ctx.nowMs() - startedAtMs,
    };
    const level = outcome.refusal ? refusalLogLevel(outcome.refusal.code) : "info";
    log[level](outcome.refusal ? "auction refused" : "auction answered", fields);
    recordAuction(metrics, outcome, (fields as Record<string, unknown>).receivingChainId, fields.durationMs);
  };
}

/** Counters only (no per-request labels): refusal codes are a closed set, chains only once a bid proved them configured. */
function recordAuction(
  metrics: ReturnType<typeof routerMetrics>,
  outcome: Outcome,
  receivingChainId: unknown,
  durationMs: number,
): void {
  metrics.auctionRequests.inc();
  metrics.bidDuration.observe({ result: outcome.result }, durationMs / 1000);
  if (outcome.refusal) {
    metrics.auctionRefusals.inc({ reason: outcome.refusal.code });
  } else if (outcome.result === "bid") {
    metrics.bidsSent.inc({ chain: String(receivingChainId) });
    metrics.lastBidTime.set(Date.now() / 1000);
  }
}

function refused(code: AuctionRefusal["code"], detail: string): Outcome {
  return { result: "refused", refusal: refusal(code, detail), fields: {} };
}

interface RouterFields {
  readonly router: string;
  readonly amountReceived: string;
  readonly sendingChainTxManagerAddress: string;
  readonly receivingChainTxManagerAddress: string;
  readonly bidExpiry: number;
}

/** §1.7: the fields in ABI order; everything but the router's fields copied from the request unchanged. */
function buildBid(p: AuctionPayload, r: RouterFields): AuctionBid {
  return {
    user: p.user,
    router: r.router,
    initiator: p.initiator,
    sendingChainId: p.sendingChainId,
    sendingAssetId: p.sendingAssetId,
    amount: p.amount,
    receivingChainId: p.receivingChainId,
    receivingAssetId: p.receivingAssetId,
    amountReceived: r.amountReceived,
    receivingAddress: p.receivingAddress,
    transactionId: p.transactionId,
    expiry: p.expiry,
    callDataHash: p.callDataHash,
    callTo: p.callTo,
    encryptedCallData: p.encryptedCallData,
    sendingChainTxManagerAddress: r.sendingChainTxManagerAddress,
    receivingChainTxManagerAddress: r.receivingChainTxManagerAddress,
    bidExpiry: r.bidExpiry,
  };
}
