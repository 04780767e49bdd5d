import { ZeroAddress, ZeroHash, getAddress } from "ethers";
import { errorMessage } from "../../../shared/errors";
import { routerMetrics } from "../../../shared/metrics/router-metrics";
import { encodeEnvelope, parseEnvelope } from "../../../shared/messaging/envelope";
import type { MessagingRequest } from "../../../shared/messaging/types";
import { acceptedExpiryRange, checkAuctionExpiry } from "../../../shared/protocol/auction-expiry";
import { auctionLogFields, parseAuctionPayload } from "../../../shared/protocol/auction-payload";
import { quoteAuction, type AuctionQuote } from "../../../shared/protocol/auction-quote";
import {
  isColdRefusal,
  isLiquidityRefusal,
  refusal,
  refusalLogLevel,
  type AuctionRefusal,
} from "../../../shared/protocol/auction-refusal";
import { sleep } from "../../../shared/timing";
import { encodeBidFast } from "../../../shared/protocol/bid-encoder";
import { BID_EXPIRY_SEC } from "../../../shared/protocol/expiry";
import { isSwapSupported } from "../../../shared/protocol/pools";
import type { AuctionBid, AuctionPayload } from "../../../shared/protocol/types";
import { transferKey } from "../../../shared/queues";
import type { ReplicationGuard } from "../../../shared/queues/replication";
import { keccak256Bytes } from "../../../shared/signer/native-keccak";
import { sanitizeSignatureV } from "../../../shared/signer/router-signer";
import type { BidReservations } from "../../../shared/transfers/bid-reservations";
import type { RequestClaim } from "../claimed-delivery";
import type { ReservedBid } from "../request-claims";
import type { InventoryCache } from "../inventory-cache";
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

/**
 * Synthetic requests the handler runs after it is created (see warmUp): about 0.3 s of CPU at start, and as many
 * dry-run reservation scripts in Redis (pipelined, a slice at a time). With 1 000, `run` and Node's promise and tick
 * internals still reached TurboFan during the first few hundred real requests (docs/auction.md, "Fourth pass").
 */
export const DEFAULT_WARM_UP_ROUNDS = 2_000;
/** Warm-up rounds per event-loop turn: a request arriving meanwhile waits at most one slice (a few ms). */
const WARM_UP_SLICE = 50;
/** A well-formed signature for the warm-up's reply envelopes (never published). */
const WARM_UP_SIGNATURE = `0x${"00".repeat(64)}1b`;
/** Where the warm-up's requests say their answer goes (it never does: see warmUpReply). */
const WARM_UP_INBOX = "_INBOX.warm-up";

export interface AuctionHandlerOptions {
  readonly balanceMaxAgeMs?: number;
  readonly coldRetryWindowMs?: number;
  /** Synthetic bids priced and encoded when the handler is created; 0 skips the warm-up. */
  readonly warmUpRounds?: number;
}

export interface AuctionHandlerDeps {
  readonly reservations: BidReservations;
  /**
   * redis.minReplicas > 0: the replica wait on the reservations' own connection (shared/queues/replication.ts);
   * a bid is sent only once its reservation is on that many replicas. Undefined (no cost) when minReplicas is 0.
   */
  readonly replication?: ReplicationGuard;
  /** The pools' inventory targets (docs/auction.md, "Inventory decline"); no rule without it. */
  readonly inventory?: InventoryCache;
  readonly options?: AuctionHandlerOptions;
}

/** The structured result of one auction, logged once. */
interface Outcome {
  readonly result: "bid" | "quote" | "refused";
  readonly refusal?: AuctionRefusal;
  readonly fields: Record<string, unknown>;
  /** Reserved under the request's claim but not sent (StoreNotReplicated): a retry re-sends this very bid. */
  readonly reserved?: ReservedBid;
  /** A refusal for liquidity: its route and the request's amount in USD (undefined: no fresh price). */
  readonly refusedVolume?: { readonly route: string; readonly usd: number | undefined };
}

interface ChainFacts {
  readonly txManager: string;
  readonly minGasWei: bigint;
}

/** A request that passed every pure step: what the reservation and the bid need. */
interface Priced {
  readonly payload: AuctionPayload;
  readonly sending: ChainFacts;
  readonly receiving: ChainFacts;
  readonly quote: AuctionQuote;
  readonly nowSec: number;
  /** Sending-asset units. */
  readonly amount: bigint;
  readonly inputDecimals: number;
  readonly outputDecimals: number;
}

/**
 * `auction.request` (docs/protocol.md#auction, hardened): modes → payload → chains → pool → expiry window → decimals
 * → router fee and gas fee → one atomic Redis step (rate limit, balance and gas freshness, liquidity net of
 * hard holds and of unprepared bids up to their share, signer gas, then the bid's promise and rate stamp) →
 * bid, signed unless dry run → response. A refusal is logged once with its code and never answered; nothing a
 * requester sends can throw out of the handler.
 * No RPC happens here: balances come from Redis, prices, gas prices and decimals from the refreshers' cache.
 */
/** A request, with its claim when several instances receive every request; resolves false when the claim was lost. */
export type AuctionRequestHandler = (request: MessagingRequest, claim?: RequestClaim) => Promise<boolean>;

/** How an answer leaves: the messaging layer's respond, or the warm-up's sink. */
type Reply = (request: MessagingRequest, data: unknown) => void;

export function createAuctionHandler(ctx: AuctionContext, deps: AuctionHandlerDeps): AuctionRequestHandler {
  const balanceMaxAgeMs = deps.options?.balanceMaxAgeMs ?? DEFAULT_BALANCE_MAX_AGE_MS;
  const chains = new Map<number, ChainFacts>();
  for (const chain of Object.values(ctx.config.chainConfig)) {
    chains.set(chain.chainId, {
      txManager: getAddress(chain.transactionManagerAddress),
      minGasWei: BigInt(chain.minGas),
    });
  }
  const log = ctx.logger.child({ at: "auction.outcome" });
  const replication = deps.replication;
  const metrics = routerMetrics();

  /** The request's pure steps, modes to quote: a refusal, or what the bid needs. No I/O (the warm-up runs it). */
  const price = (data: unknown, nowMs: number): Outcome | Priced => {
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
    const parsed = parseAuctionPayload(data);
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
    return { payload, sending, receiving, quote, nowSec, amount, inputDecimals, outputDecimals };
  };

  const respond: Reply = (request, data) => ctx.messaging.respond(request, data);
  const run = async (
    request: MessagingRequest,
    nowMs: number,
    claim?: RequestClaim,
    reply: Reply = respond,
  ): Promise<Outcome> => {
    const priced = price(request.data, nowMs);
    if ("result" in priced) {
      return priced;
    }
    const { payload, sending, receiving, quote, nowSec } = priced;
    const inventory = deps.inventory;
    const bidExpiry = nowSec + BID_EXPIRY_SEC;
    const key = transferKey(payload.transactionId, payload.user);
    const commit = !payload.dryRun;
    const untilMs = (bidExpiry + RESERVATION_GRACE_SEC) * 1000;
    let reserved;
    const since = replication === undefined ? 0 : replication.mark();
    try {
      reserved = await deps.reservations.reserve({
        // Named fields, not `...payload`: a spread that a later key overrides (amount) costs ~15 µs per request.
        sendingChainId: payload.sendingChainId,
        sendingAssetId: payload.sendingAssetId,
        receivingChainId: payload.receivingChainId,
        receivingAssetId: payload.receivingAssetId,
        transferKey: key,
        amount: quote.amountReceived,
        nowMs,
        untilMs,
        maxAgeMs: balanceMaxAgeMs,
        rateLimitMs: ctx.config.requestLimit,
        minGasSending: sending.minGasWei,
        minGasReceiving: receiving.minGasWei,
        commit,
        // The inventory rule's keep, from the cache (no I/O); undefined without targets for the pool.
        keep:
          inventory === undefined
            ? undefined
            : inventory.keepFor({
                sendingChainId: payload.sendingChainId,
                sendingAssetId: payload.sendingAssetId,
                receivingChainId: payload.receivingChainId,
                receivingAssetId: payload.receivingAssetId,
                amount: priced.amount,
                inputDecimals: priced.inputDecimals,
                outputDecimals: priced.outputDecimals,
              }),
        // Fenced on the request's claim: an instance that lost it (another took the request over) reserves nothing.
        // Always the key, undefined without a claim: one object shape whether the warm-up or a request built it.
        claim:
          claim === undefined
            ? undefined
            : {
                key: claim.key,
                token: claim.token,
                bidExpiry,
                gasFee: quote.gasFee.toString(),
                leaseMs: claim.reservedLeaseMs,
                keepMs: claim.keepMs,
              },
      });
    } catch (err) {
      return refused("StoreUnavailable", `redis: ${errorMessage(err)}`);
    }
    if (reserved.code !== "ok") {
      if (!isLiquidityRefusal(reserved.code)) return refused(reserved.code, reserved.detail);
      return {
        ...refused(reserved.code, reserved.detail),
        refusedVolume: {
          route: `${payload.sendingChainId}-${payload.receivingChainId}`,
          usd: ctx.fees.usdValue(payload.sendingChainId, payload.sendingAssetId, priced.amount, priced.inputDecimals),
        },
      };
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
      if (replication !== undefined) {
        try {
          await replication.ensure(since);
        } catch (err) {
          // A reservation a failover could forget would let the liquidity be promised twice: the bid is not sent.
          // Under a claim the reservation stays (until it lapses): a taker may re-send this very bid (state `r`),
          // and does so only once its own replica wait passes, so the bid is never sent without its promise.
          if (claim === undefined) {
            await deps.reservations
              .withdraw({ ...payload, transferKey: key, amount: quote.amountReceived, untilMs })
              .catch(() => undefined);
            return refused("StoreNotReplicated", errorMessage(err));
          }
          // The claim is in state `r` now (a second reserve would be refused): the cold retry re-sends this bid.
          const reservedBid = {
            amountReceived: quote.amountReceived.toString(),
            bidExpiry,
            gasFee: quote.gasFee.toString(),
          };
          return { ...refused("StoreNotReplicated", errorMessage(err)), reserved: reservedBid };
        }
      }
      try {
        bidSignature = sanitizeSignatureV(await ctx.signer.signMessage(bidDigest(bid)));
      } catch (err) {
        // The bid is never sent: its promise must not hold liquidity until it lapses. Only this bid goes: the
        // transfer's earlier bids were sent and stay promised.
        await deps.reservations
          .withdraw({ ...payload, transferKey: key, amount: quote.amountReceived, untilMs })
          .catch(() => undefined);
        return refused("SignerUnavailable", errorMessage(err));
      }
    }
    reply(request, { bid, bidSignature, gasFeeInReceivingToken: quote.gasFee.toString() });
    claim?.published();
    return {
      result: commit ? "bid" : "quote",
      fields: { amountReceived: bid.amountReceived, gasFee: quote.gasFee.toString(), bidExpiry },
    };
  };

  /**
   * Synthetic requests of the first swap pool, before the first real request: a fresh process otherwise runs its
   * first few hundred bids in the interpreter while V8 compiles, at about twice the CPU and latency of a warm one
   * (bench/auction.ts, BENCH_WARMUP). Each round takes the pure steps of a bid (envelope, payload, pool, expiry,
   * fees, quote, bid encoding and hash, reply envelope), then the same request as a quote through the handler's
   * whole run, the reservation script in Redis included (a dry run reserves and stamps nothing), answered into a
   * sink. Nothing is reserved, signed, published, counted or logged.
   */
  const warmUp = async (from: number, to: number): Promise<boolean> => {
    const sample = warmUpRequest(ctx.config);
    if (sample === undefined) return false;
    const nowMs = ctx.nowMs();
    const range = acceptedExpiryRange(Math.floor(nowMs / 1000));
    sample.expiry = Math.floor((range.minExclusive + range.maxExclusive) / 2);
    const quotes: Promise<Outcome>[] = [];
    let priceable = true;
    for (let i = from; i < to; i += 1) {
      sample.transactionId = `0x${i.toString(16).padStart(64, "0")}`;
      sample.dryRun = false;
      const data = parseEnvelope(warmUpBody(sample), { requireInbox: true }).data;
      auctionLogFields(data);
      const priced = price(data, nowMs);
      if ("result" in priced) {
        priceable = false; // cold caches or an unpriceable pool: nothing further to warm
        break;
      }
      const bid = buildBid(priced.payload, {
        router: ctx.routerAddress,
        amountReceived: priced.quote.amountReceived.toString(),
        sendingChainTxManagerAddress: priced.sending.txManager,
        receivingChainTxManagerAddress: priced.receiving.txManager,
        bidExpiry: priced.nowSec + BID_EXPIRY_SEC,
      });
      bidDigest(bid);
      encodeEnvelope({
        responseInbox: WARM_UP_INBOX,
        data: { bid, bidSignature: WARM_UP_SIGNATURE, gasFeeInReceivingToken: priced.quote.gasFee.toString() },
      });
      sample.dryRun = true;
      quotes.push(run(warmUpMessage(warmUpBody(sample), nowMs), nowMs, undefined, warmUpReply));
    }
    // Awaited even when a round stopped the slice: none of its quotes is left unobserved.
    await Promise.all(quotes);
    return priceable;
  };
  // In slices of WARM_UP_SLICE, one per event-loop turn (the next once the slice's quotes are back from Redis): the
  // rest of the start (connections, subscriptions) and the first requests interleave with it, so a restarted
  // instance does not answer later for it (auction-kill.test.ts).
  const warmUpRounds = deps.options?.warmUpRounds ?? DEFAULT_WARM_UP_ROUNDS;
  const warmUpSlice = async (from: number): Promise<void> => {
    const to = Math.min(from + WARM_UP_SLICE, warmUpRounds);
    try {
      if (!(await warmUp(from, to))) return;
      if (to < warmUpRounds) setImmediate(() => void warmUpSlice(to)).unref();
      else ctx.logger.debug("auction warm-up done", { at: "auction.warm-up", rounds: warmUpRounds });
    } catch (err) {
      // Only a speed-up: a configuration the synthetic request trips on must not stop the auction from starting.
      ctx.logger.debug("auction warm-up stopped early", { at: "auction.warm-up", error: errorMessage(err) });
    }
  };
  if (warmUpRounds > 0) setImmediate(() => void warmUpSlice(0)).unref();

  const coldRetryWindowMs = deps.options?.coldRetryWindowMs ?? DEFAULT_COLD_RETRY_WINDOW_MS;
  /**
   * A takeover of a request whose owner died after reserving (request-claims.ts, state `r`): the same bid again,
   * from the fields the reservation stored, nothing reserved. The signature is deterministic (RFC 6979), so if the
   * owner did publish before dying the requester gets the same bytes twice, never a second bid.
   */
  const resend = async (request: MessagingRequest, stored: ReservedBid, claim?: RequestClaim): Promise<Outcome> => {
    if (replication !== undefined) {
      // The owner's reservation may never have reached the replicas (its own wait failed): not without them.
      try {
        await replication.ensure(replication.mark());
      } catch (err) {
        return refused("StoreNotReplicated", errorMessage(err));
      }
    }
    const parsed = parseAuctionPayload(request.data);
    const sending = parsed.ok ? chains.get(parsed.payload.sendingChainId) : undefined;
    const receiving = parsed.ok ? chains.get(parsed.payload.receivingChainId) : undefined;
    if (!parsed.ok || sending === undefined || receiving === undefined) {
      return refused("InternalError", "a reserved request no longer parses"); // the owner parsed the same bytes
    }
    const bid = buildBid(parsed.payload, {
      router: ctx.routerAddress,
      amountReceived: stored.amountReceived,
      sendingChainTxManagerAddress: sending.txManager,
      receivingChainTxManagerAddress: receiving.txManager,
      bidExpiry: stored.bidExpiry,
    });
    let bidSignature: string | null = null;
    if (!parsed.payload.dryRun) {
      try {
        bidSignature = sanitizeSignatureV(await ctx.signer.signMessage(bidDigest(bid)));
      } catch (err) {
        return refused("SignerUnavailable", errorMessage(err)); // the promise stays: the owner may have sent it
      }
    }
    ctx.messaging.respond(request, { bid, bidSignature, gasFeeInReceivingToken: stored.gasFee });
    claim?.published();
    return {
      result: parsed.payload.dryRun ? "quote" : "bid",
      fields: { amountReceived: bid.amountReceived, gasFee: stored.gasFee, bidExpiry: bid.bidExpiry, resent: true },
    };
  };

  const attempt = async (
    request: MessagingRequest,
    nowMs: number,
    claim?: RequestClaim,
    reserved?: ReservedBid,
  ): Promise<Outcome> => {
    const again = reserved ?? claim?.resend;
    try {
      return again ? await resend(request, again, claim) : await run(request, nowMs, claim);
    } catch (err) {
      return refused("InternalError", errorMessage(err));
    }
  };

  // With a claim (claimed-delivery.ts) the result says whether the request is settled: false when another
  // instance took it over, so this one must not mark it answered.
  return async (request: MessagingRequest, claim?: RequestClaim): Promise<boolean> => {
    const startedAtMs = ctx.nowMs();
    const retryUntilMs = Date.now() + coldRetryWindowMs - COLD_RETRY_PAUSE_MS; // real time: tests may fix nowMs
    let outcome = await attempt(request, startedAtMs, claim);
    // A refusal for data not there yet (e.g. right after start, before the pollers' first balances) is retried
    // while the requester still listens: a refusal is never answered, so a silent one is a lost swap.
    let coldRetries = 0;
    let reserved: ReservedBid | undefined;
    while (outcome.refusal !== undefined && isColdRefusal(outcome.refusal.code) && Date.now() < retryUntilMs) {
      // Claimed before waiting: watchers take an unclaimed request over once the lease would have run out.
      if (coldRetries === 0 && claim !== undefined && !(await claim.hold().catch(() => true))) {
        outcome = refused("ClaimLost", "another auction instance took this request over");
        break;
      }
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
      reserved = outcome.reserved ?? reserved;
      outcome = await attempt(request, ctx.nowMs(), claim, reserved);
    }
    // Assignments, not object spreads: V8 copies spread objects property by property on a slow path, and this
    // line is built once per request.
    const fields = auctionLogFields(request.data);
    fields.from = request.from;
    fields.result = outcome.result;
    fields.code = outcome.refusal?.code ?? "ok";
    if (outcome.refusal) fields.detail = outcome.refusal.detail;
    Object.assign(fields, outcome.fields);
    if (coldRetries > 0) fields.coldRetries = coldRetries;
    const durationMs = ctx.nowMs() - startedAtMs;
    fields.durationMs = durationMs;
    const level = outcome.refusal ? refusalLogLevel(outcome.refusal.code) : "info";
    log[level](outcome.refusal ? "auction refused" : "auction answered", fields);
    recordAuction(metrics, outcome, fields.receivingChainId, durationMs);
    return outcome.refusal?.code !== "ClaimLost";
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
    const volume = outcome.refusedVolume;
    if (volume !== undefined) {
      if (volume.usd === undefined) metrics.refusedUnpriced.inc({ route: volume.route });
      else metrics.refusedVolumeUsd.inc({ route: volume.route }, volume.usd);
    }
  } else if (outcome.result === "bid") {
    metrics.bidsSent.inc({ chain: String(receivingChainId) });
    metrics.lastBidTime.set(Date.now() / 1000);
  }
}

function refused(code: AuctionRefusal["code"], detail: string): Outcome {
  return { result: "refused", refusal: refusal(code, detail), fields: {} };
}

/**
 * The 32 bytes the router signs (EIP-191) for a bid: keccak256 of its encoding (docs/protocol.md#bid-encoding), hashed
 * natively.
 */
function bidDigest(bid: AuctionBid): Buffer {
  return keccak256Bytes(Buffer.from(encodeBidFast(bid).slice(2), "hex"));
}

/** An `auction.request` payload between the first swap pool's first two configured assets, or undefined. */
function warmUpRequest(config: AuctionContext["config"]): Record<string, unknown> | undefined {
  for (const pool of config.swapPools) {
    const assets = pool.assets.filter((a) => config.chainConfig[String(a.chainId)] !== undefined);
    if (assets.length >= 2) {
      const user = `0x${"11".repeat(20)}`;
      return {
        user,
        initiator: user,
        sendingChainId: assets[0].chainId,
        sendingAssetId: assets[0].assetId,
        amount: "1000000000000000000000000",
        receivingChainId: assets[1].chainId,
        receivingAssetId: assets[1].assetId,
        receivingAddress: user,
        callTo: ZeroAddress,
        callDataHash: ZeroHash,
        encryptedCallData: "0x",
        expiry: 0,
        transactionId: ZeroHash,
        dryRun: false,
      };
    }
  }
  return undefined;
}

/** A warm-up request's envelope, as a requester would send it. */
function warmUpBody(data: Record<string, unknown>): Buffer {
  return Buffer.from(JSON.stringify({ responseInbox: WARM_UP_INBOX, data, version: "0.0.1" }));
}

/** A warm-up request as the messaging layer hands one over (never received: nothing answers its inbox). */
function warmUpMessage(body: Buffer, nowMs: number): MessagingRequest {
  return {
    subject: "warm-up",
    from: ZeroAddress,
    topic: "auction",
    responseInbox: WARM_UP_INBOX,
    data: parseEnvelope(body, { requireInbox: true }).data,
    receivedAtMs: nowMs,
    sizeBytes: body.length,
    raw: body,
  };
}

/** The warm-up's answers: encoded as a reply would be, then dropped. */
function warmUpReply(request: MessagingRequest, data: unknown): void {
  encodeEnvelope({ responseInbox: request.responseInbox, data });
}

interface RouterFields {
  readonly router: string;
  readonly amountReceived: string;
  readonly sendingChainTxManagerAddress: string;
  readonly receivingChainTxManagerAddress: string;
  readonly bidExpiry: number;
}

/**
 * docs/protocol.md#auction-response: the fields in ABI order; everything but the router's fields copied from the
 * request unchanged.
 */
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
