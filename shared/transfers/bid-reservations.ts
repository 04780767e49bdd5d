import type { Redis } from "ioredis";
import {
  auctionRateKey,
  bidReservationExpiryKey,
  bidReservationLapseKey,
  bidReservationsKey,
  cleanUpModeKey,
  gasBalanceKey,
  routerBalanceKey,
} from "../coordination/keys";
import { defineScript, reply } from "../redis/script-runner";

/**
 * The auction's shared bookkeeping in Redis, so any number of auction instances never promise the same
 * liquidity twice (docs/protocol.md#deviation-reservations; the policy is docs/auction.md, "Promises"):
 * - every signed bid keeps its `amountReceived` promised on the receiving (chain, asset) until its own
 *   `bidExpiry` (plus a grace, see the auction); a transfer's promise is its largest such bid, so a
 *   re-request never lowers it;
 * - once a sending-side prepare that passes the receiving prepare's verification is seen, the poller turns the
 *   promise into a hard hold of what that prepare locked for, released once the receiving prepare is stored and
 *   the balance read after it reflects the lock, or as soon as the transfer will not be honoured;
 * - unprepared promises block new bids only up to `UNPREPARED_SHARE_PERCENT` of the free liquidity, so
 *   requesters that never prepare cannot lock the rest;
 * - a promise stops counting at its lapse time, however many lapsed with it (sums per lapse time);
 * - the `requestLimit` stamp per transfer.
 * One Lua script checks rate limit, freshness, liquidity and gas and records the bid and the stamp in
 * the same atomic step. Amounts are uint256 decimal strings: Lua numbers are doubles, so the script compares,
 * adds and subtracts them as digit strings, 14 digits at a time (exact in a double).
 */

/**
 * The share of the free liquidity (balance minus hard holds) that unprepared promises can block: 1/2, 50 %
 * (docs/auction.md, "Promises"). Promises of unprepared bids count against a new bid only up to this share, so
 * requests up to the rest are never refused for liquidity, whatever other requesters do. A divisor: the script
 * halves exactly.
 */
const UNPREPARED_SHARE_DIVISOR = 2;
export const UNPREPARED_SHARE_PERCENT = 100 / UNPREPARED_SHARE_DIVISOR;

/**
 * Open bids one transfer may hold at once (its re-requests within bidExpiry + grace). Each keeps its own
 * promise, so the list is bounded; an honest requester re-asks a handful of times at most.
 */
export const MAX_BIDS_PER_TRANSFER = 16;

/**
 * The step lapse times are rounded up to: a promise lasts until its `untilMs` rounded up to the next 10 s. The
 * sums are kept per step, so at most one per 10 s of the longest promise (the 1 h hold) is ever open: ≈ 400, which
 * bounds what one prune subtracts whatever the number of promises (bench/reservation-scripts.ts). The scripts
 * round with their own copy (shared/redis/scripts/includes/promises.lua), which the script-runner test compares.
 */
export const LAPSE_STEP_MS = 10_000;

/** When a promise recorded with `untilMs` stops counting. */
export function promiseLapseMs(untilMs: number): number {
  return Math.ceil(untilMs / LAPSE_STEP_MS) * LAPSE_STEP_MS;
}

/**
 * The scripts (shared/redis/scripts/bid-*.lua): their headers name every key and argument, the promise records'
 * layout is shared/redis/scripts/includes/promises.lua.
 */
const PROMISE_KEYS = ["promises", "transfers", "lapseTimes"] as const;

const RESERVE = defineScript({
  file: "bid-reserve",
  keys: ["rate", "balance", "sendingGas", "receivingGas", ...PROMISE_KEYS, "cleanUp"],
  optionalKeys: ["claim"],
  args: [
    "nowMs",
    "maxAgeMs",
    "amount",
    "member",
    "untilMs",
    "rateLimitMs",
    "minGasSending",
    "minGasReceiving",
    "commit",
    "shareDivisor",
    "maxBids",
    "keep",
  ],
  optionalArgs: ["claimToken", "bidExpiry", "gasFee", "leaseMs", "keepMs"],
  decode: (raw) => reply.fields(raw) as { code: ReserveCode } & Partial<Record<string, string>>,
});

const PIN = defineScript({
  file: "bid-pin",
  keys: PROMISE_KEYS,
  args: ["member", "untilMs", "amountUsed", "nowMs"],
  decode: reply.flag,
});

const RELEASE = defineScript({
  file: "bid-release",
  keys: PROMISE_KEYS,
  args: ["member", "hardOnly"],
  decode: reply.flag,
});

const WITHDRAW = defineScript({
  file: "bid-withdraw",
  keys: PROMISE_KEYS,
  args: ["member", "amount", "untilMs"],
  decode: reply.flag,
});

export type ReserveCode =
  | "ok"
  | "AuctionRateExceeded"
  | "StaleBalance"
  | "NotEnoughLiquidity"
  | "LiquidityUnavailable"
  | "InventoryBelowMinimum"
  | "NotEnoughGas"
  | "ClaimLost"
  | "RouterInCleanUpMode";

/** The auction request's claim this step is fenced on (services/auction/request-claims.ts). */
export interface ReserveClaim {
  readonly key: string;
  readonly token: string;
  /** Stored with the claim on ok, so a taker re-sends this very bid. */
  readonly bidExpiry: number;
  readonly gasFee: string;
  /** The claim's lease from this step on (state `r`), and how long the key stays when this step creates it. */
  readonly leaseMs: number;
  readonly keepMs: number;
}

export interface ReserveParams {
  readonly sendingChainId: number;
  readonly sendingAssetId: string;
  readonly receivingChainId: number;
  readonly receivingAssetId: string;
  /** `transferKey(transactionId, user)`: the rate limit's key too (nobody can set it for another person's transfer). */
  readonly transferKey: string;
  /** What the bid promises on the receiving chain. */
  readonly amount: bigint;
  readonly nowMs: number;
  /** When the reservation lapses unless pinned. */
  readonly untilMs: number;
  /** Balances and gas balances older than this count as stale. */
  readonly maxAgeMs: number;
  /** `requestLimit`; 0 disables the rate limit. */
  readonly rateLimitMs: number;
  readonly minGasSending: bigint;
  readonly minGasReceiving: bigint;
  /** false (dry run): every check, but neither reservation nor rate-limit stamp. */
  readonly commit: boolean;
  /**
   * The inventory rule: what the receiving (chain, asset) must still hold after this bid, net of hard holds
   * (shared/protocol/inventory.ts receivingKeep); undefined when its pool has no inventory targets.
   */
  readonly keep?: bigint;
  /** Fences the step on the request's claim (several auction instances receive every request). */
  readonly claim?: ReserveClaim;
}

export interface ReserveOutcome {
  readonly code: ReserveCode;
  /** Detail for the log: balances as decimal strings, or which value was missing or stale. */
  readonly detail: string;
}

/** What is promised on one receiving (chain, asset), as decimal amounts. */
export interface Promises {
  /** Every promise: hard holds plus unprepared bids (what lapsed since the last script still counts here). */
  readonly total: bigint;
  /** Transfers whose sending prepare the poller has seen, until their receiving prepare shows in the balance. */
  readonly hard: bigint;
  /** Per transfer, its largest unexpired signed bid, or its hard hold. */
  readonly byTransfer: ReadonlyMap<string, bigint>;
}

export interface BidReservations {
  reserve(params: ReserveParams): Promise<ReserveOutcome>;
  /**
   * The transfer's verified sending prepare is in: its promise becomes a hard hold of `amountUsed` (what the
   * receiving prepare will lock for it; never more than is promised now) until `untilMs`, or an existing hold is
   * extended. False when there is no live promise (never bid, released or lapsed).
   */
  pin(chainId: number, assetId: string, transferKey: string, untilMs: number, amountUsed: bigint): Promise<boolean>;
  /** Removes a transfer's promise, every bid of it or its hold; false when there was none. */
  release(chainId: number, assetId: string, transferKey: string): Promise<boolean>;
  /** Removes a transfer's hard hold (its sending side will not be honoured); false when it holds none. */
  unpin(chainId: number, assetId: string, transferKey: string): Promise<boolean>;
  /** Takes back the one bid `reserve` just recorded (it was never sent); the transfer's other bids stay. */
  withdraw(
    p: Pick<ReserveParams, "receivingChainId" | "receivingAssetId" | "transferKey" | "amount" | "untilMs">,
  ): Promise<boolean>;
  /** The promised total (what lapsed since the last script still counts here). */
  reservedTotal(chainId: number, assetId: string): Promise<bigint>;
  /** With `nowMs`, bids lapsed by then are left out of `byTransfer` even if no script has pruned them yet. */
  promises(chainId: number, assetId: string, nowMs?: number): Promise<Promises>;
}

export function createBidReservations(redis: Redis, prefix: string): BidReservations {
  const keysOf = (chainId: number, assetId: string): Record<(typeof PROMISE_KEYS)[number], string> => ({
    promises: bidReservationsKey(prefix, chainId, assetId),
    transfers: bidReservationExpiryKey(prefix, chainId, assetId),
    lapseTimes: bidReservationLapseKey(prefix, chainId, assetId),
  });
  return {
    reserve: async (p) => {
      const result = await RESERVE.run(redis, {
        keys: {
          rate: auctionRateKey(prefix, p.transferKey),
          balance: routerBalanceKey(prefix, p.receivingChainId, p.receivingAssetId),
          sendingGas: gasBalanceKey(prefix, p.sendingChainId),
          receivingGas: gasBalanceKey(prefix, p.receivingChainId),
          ...keysOf(p.receivingChainId, p.receivingAssetId),
          cleanUp: cleanUpModeKey(prefix),
          claim: p.claim?.key,
        },
        args: {
          nowMs: p.nowMs,
          maxAgeMs: p.maxAgeMs,
          amount: p.amount.toString(),
          member: p.transferKey.toLowerCase(),
          untilMs: p.untilMs,
          rateLimitMs: p.rateLimitMs,
          minGasSending: p.minGasSending.toString(),
          minGasReceiving: p.minGasReceiving.toString(),
          commit: p.commit ? "1" : "0",
          shareDivisor: UNPREPARED_SHARE_DIVISOR,
          maxBids: MAX_BIDS_PER_TRANSFER,
          keep: p.keep === undefined ? "" : p.keep.toString(),
          claimToken: p.claim?.token,
          bidExpiry: p.claim?.bidExpiry,
          gasFee: p.claim?.gasFee,
          leaseMs: p.claim?.leaseMs,
          keepMs: p.claim?.keepMs,
        },
      });
      return { code: result.code, detail: describe(result) };
    },
    pin: (chainId, assetId, transferKey, untilMs, amountUsed) =>
      PIN.run(redis, {
        keys: keysOf(chainId, assetId),
        args: { member: transferKey.toLowerCase(), untilMs, amountUsed: amountUsed.toString(), nowMs: Date.now() },
      }),
    release: (chainId, assetId, transferKey) =>
      RELEASE.run(redis, {
        keys: keysOf(chainId, assetId),
        args: { member: transferKey.toLowerCase(), hardOnly: "0" },
      }),
    unpin: (chainId, assetId, transferKey) =>
      RELEASE.run(redis, {
        keys: keysOf(chainId, assetId),
        args: { member: transferKey.toLowerCase(), hardOnly: "1" },
      }),
    withdraw: (p) =>
      WITHDRAW.run(redis, {
        keys: keysOf(p.receivingChainId, p.receivingAssetId),
        args: { member: p.transferKey.toLowerCase(), amount: p.amount.toString(), untilMs: p.untilMs },
      }),
    reservedTotal: async (chainId, assetId) =>
      BigInt((await redis.hget(bidReservationsKey(prefix, chainId, assetId), "total")) ?? "0"),
    promises: async (chainId, assetId, nowMs) => {
      const fields = await redis.hgetall(bidReservationsKey(prefix, chainId, assetId));
      const wm = Math.max(Number(fields.wm ?? "0"), nowMs ?? 0);
      const byTransfer = new Map<string, bigint>();
      for (const [field, value] of Object.entries(fields)) {
        if (!field.startsWith("p:")) continue;
        let best = 0n;
        for (const [, amount, untilMs] of value.matchAll(/(\d+)@(\d+)/g)) {
          if (Number(untilMs) > wm && BigInt(amount) > best) best = BigInt(amount);
        }
        if (best > 0n) byTransfer.set(field.slice(2), best);
      }
      return { total: BigInt(fields.total ?? "0"), hard: BigInt(fields.hard ?? "0"), byTransfer };
    },
  };
}

function describe(r: Partial<Record<string, string>> & { code: ReserveCode }): string {
  switch (r.code) {
    case "StaleBalance":
      return `${r.what}: no recent value in Redis (is the chain's poller running?)`;
    case "NotEnoughLiquidity":
    case "LiquidityUnavailable":
    case "ok": {
      const rule =
        r.why === "transfer-prepared" ? "; the transfer's sending side is already prepared with another bid" : "";
      return `balance ${r.balance}, hard holds ${r.hard}, unprepared bids of other transfers ${r.others}${rule}`;
    }
    case "InventoryBelowMinimum":
      return `balance ${r.balance}, hard holds ${r.hard}: the bid would leave less than ${r.keep}, the receiving chain's floor or minimum share`;
    case "AuctionRateExceeded":
      return r.why === "transfer-bids"
        ? `the transfer already holds ${MAX_BIDS_PER_TRANSFER} open bids`
        : "a bid for the same transfer was signed less than requestLimit ago";
    case "NotEnoughGas":
      return `signer gas: sending chain ${r.gasSending}, receiving chain ${r.gasReceiving}`;
    case "ClaimLost":
      return "another auction instance took this request over (this one missed its claim's lease)";
    case "RouterInCleanUpMode":
      return "clean-up mode is switched on in Redis (npm run drain): the router finishes open transfers and takes no new ones";
    default:
      return "";
  }
}
