import { ZeroAddress, ZeroHash } from "ethers";
import { errorMessage } from "../../../shared/errors";
import { ENVELOPE_VERSION, encodeEnvelope, parseEnvelope } from "../../../shared/messaging/envelope";
import type { MessagingRequest } from "../../../shared/messaging/types";
import { acceptedExpiryRange } from "../../../shared/protocol/auction-expiry";
import { auctionLogFields } from "../../../shared/protocol/auction-payload";
import type { AuctionContext } from "../context";
import { bidDigest, bidFor, bidResponse, bidTerms } from "./bid-fields";
import type { Outcome, Reply } from "./outcome";
import type { PriceRequest } from "./price-request";

/**
 * Synthetic requests the handler runs after it is created: about 0.3 s of CPU at start, and as many dry-run
 * reservation scripts in Redis (pipelined, a slice at a time). With 1 000, `run` and Node's promise and tick
 * internals still reached TurboFan during the first few hundred real requests (docs/auction.md, "Fourth pass").
 */
export const DEFAULT_WARM_UP_ROUNDS = 2_000;
/** Warm-up rounds per event-loop turn: a request arriving meanwhile waits at most one slice (a few ms). */
const WARM_UP_SLICE = 50;
/** A well-formed signature for the warm-up's reply envelopes (never published). */
const WARM_UP_SIGNATURE = `0x${"00".repeat(64)}1b`;
/** Where the warm-up's requests say their answer goes (it never does: see warmUpReply). */
const WARM_UP_INBOX = "_INBOX.warm-up";
/** The synthetic user, initiator and receiver: a well-formed address that is no real user's. */
const WARM_UP_USER = `0x${"11".repeat(20)}`;
/**
 * The synthetic amount, in sending-asset units: 10^24 is a million whole tokens of 18 decimals, so no gas fee
 * takes it all (NotEnoughAmount would end the warm-up at the quote, before the bid's encoding is warmed).
 */
const WARM_UP_AMOUNT = "1000000000000000000000000";

/** The request's whole path as the handler runs it, answered through `reply`. */
export type AnswerRequest = (
  request: MessagingRequest,
  nowMs: number,
  claim: undefined,
  reply: Reply,
) => Promise<Outcome>;

/**
 * Starts the warm-up: synthetic requests of the first swap pool, before the first real request. A fresh process
 * otherwise runs its first few hundred bids in the interpreter while V8 compiles, at about twice the CPU and latency
 * of a warm one (bench/auction.ts, BENCH_WARMUP). Each round takes the pure steps of a bid (envelope, payload, pool,
 * expiry, fees, quote, bid encoding and hash, reply envelope), then the same request as a quote through the
 * handler's whole path, the reservation script in Redis included (a dry run reserves and stamps nothing), answered
 * into a sink. Nothing is reserved, signed, published, counted or logged. In slices of WARM_UP_SLICE, one per
 * event-loop turn (the next once the slice's quotes are back from Redis): the rest of the start (connections,
 * subscriptions) and the first requests interleave with it, so a restarted instance does not answer later for it
 * (auction-kill.test.ts).
 */
export function startWarmUp(ctx: AuctionContext, price: PriceRequest, answer: AnswerRequest, rounds: number): void {
  const slice = async (from: number): Promise<void> => {
    const to = Math.min(from + WARM_UP_SLICE, rounds);
    try {
      if (!(await warmUpRounds(ctx, price, answer, from, to))) return;
      if (to < rounds) setImmediate(() => void slice(to)).unref();
      else ctx.logger.debug("auction warm-up done", { at: "auction.warm-up", rounds });
    } catch (err) {
      // Only a speed-up: a configuration the synthetic request trips on must not stop the auction from starting.
      ctx.logger.debug("auction warm-up stopped early", { at: "auction.warm-up", error: errorMessage(err) });
    }
  };
  if (rounds > 0) setImmediate(() => void slice(0)).unref();
}

/** Rounds [from, to); false when the pool cannot be priced (cold caches): nothing further to warm. */
async function warmUpRounds(
  ctx: AuctionContext,
  price: PriceRequest,
  answer: AnswerRequest,
  from: number,
  to: number,
): Promise<boolean> {
  const sample = warmUpRequest(ctx.config);
  if (sample === undefined) return false;
  const nowMs = ctx.nowMs();
  const range = acceptedExpiryRange(Math.floor(nowMs / 1000));
  sample.expiry = Math.floor((range.minExclusive + range.maxExclusive) / 2);
  const quotes: Promise<Outcome>[] = [];
  let priceable = true;
  for (let i = from; i < to; i += 1) {
    // A transaction id per round, as every real request has its own.
    sample.transactionId = `0x${i.toString(16).padStart(64, "0")}`;
    sample.dryRun = false;
    const data = parseEnvelope(warmUpBody(sample), { requireInbox: true }).data;
    auctionLogFields(data);
    const priced = price(data, nowMs);
    if ("result" in priced) {
      priceable = false;
      break;
    }
    const terms = bidTerms(priced);
    const bid = bidFor(priced.payload, ctx.routerAddress, priced.sending, priced.receiving, terms);
    bidDigest(bid);
    encodeEnvelope({ responseInbox: WARM_UP_INBOX, data: bidResponse(bid, WARM_UP_SIGNATURE, terms.gasFee) });
    sample.dryRun = true;
    quotes.push(answer(warmUpMessage(warmUpBody(sample), nowMs), nowMs, undefined, warmUpReply));
  }
  // Awaited even when a round stopped the slice: none of its quotes is left unobserved.
  await Promise.all(quotes);
  return priceable;
}

/** An `auction.request` payload between the first swap pool's first two configured assets, or undefined. */
function warmUpRequest(config: AuctionContext["config"]): Record<string, unknown> | undefined {
  for (const pool of config.swapPools) {
    const assets = pool.assets.filter((a) => config.chainConfig[String(a.chainId)] !== undefined);
    if (assets.length >= 2) {
      return {
        user: WARM_UP_USER,
        initiator: WARM_UP_USER,
        sendingChainId: assets[0].chainId,
        sendingAssetId: assets[0].assetId,
        amount: WARM_UP_AMOUNT,
        receivingChainId: assets[1].chainId,
        receivingAssetId: assets[1].assetId,
        receivingAddress: WARM_UP_USER,
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
  return Buffer.from(JSON.stringify({ responseInbox: WARM_UP_INBOX, data, version: ENVELOPE_VERSION }));
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
