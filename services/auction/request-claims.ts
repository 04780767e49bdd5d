import type { Redis } from "ioredis";
import { auctionClaimKey } from "../../shared/coordination/keys";
import { defineScript, reply } from "../../shared/redis/script-runner";

/**
 * Which auction instance answers a request (docs/auction.md, "Instances and failures"). NATS hands each request
 * to one instance (queue group), which claims it here (in its reservation step, bid-reservations.ts, or before a
 * wait) and keeps it alive with a short lease while it works; every instance also watches every request. The key
 * (`auctionClaimKey`) holds a claim in state `c` (claimed: the owner is working on it) or `r` (reserved: the bid's
 * promise is recorded in the same Lua step, bid-reservations.ts, and the owner signs and publishes), each with
 * its owner's token and lease end, `r` also with the bid; the value's format is written and read only by
 * shared/redis/scripts/includes/claim-value.lua, which every claim script includes. Anything else (a value no
 * script writes) reads as settled: taking over a claim no script can read could answer a request twice. That a
 * request is settled (answered, or
 * refused for good) travels on NATS instead, behind the answer itself (claimed-delivery.ts): a mark here could not
 * be written in the same step as the publish, so it would either lose a request or repeat its bid.
 * A watcher whose check finds the lease run out (or no claim at all) takes the request over under a new token (the fencing
 * token: the reservation script refuses an owner whose token is no longer there), and either runs the auction
 * (state `c`) or re-sends the same bid (state `r`: signatures are deterministic, so it is byte-identical).
 * Times come from Redis (`TIME`), so instances on hosts with skewed clocks agree on when a lease ran out.
 */

/** Owner's lease: a live owner renews it every LEASE_MS / 3, so a dead one is noticed this long after its last renewal. */
export const CLAIM_LEASE_MS = 300;
/**
 * The lease once the bid is reserved (state `r`). The owner publishes within a signature of reserving, so a
 * watcher only re-sends after this long: a starved but live owner (an event loop stalled for more than the
 * short lease, as under a burst on a loaded machine) would otherwise publish too.
 */
export const CLAIM_RESERVED_LEASE_MS = 1_000;
/** How long the key stays, whatever its state: longer than any requester waits (the SDK: 6 s). */
export const CLAIM_KEEP_MS = 30_000;

/** The scripts (shared/redis/scripts/claim-*.lua; their headers name every key and argument). */
const CLAIM = defineScript({
  file: "claim-take",
  keys: ["claim"],
  args: ["token", "leaseMs", "keepMs"],
  decode: reply.flag,
});

const CHECK = defineScript({
  file: "claim-check",
  keys: [],
  restKeys: true,
  args: ["leaseMs", "keepMs", "reservedLeaseMs"],
  restArgs: true,
  decode: (raw) => (raw as string[][]).map(parseCheck),
});

const RENEW = defineScript({
  file: "claim-renew",
  keys: [],
  restKeys: true,
  args: ["leaseMs", "reservedLeaseMs"],
  restArgs: true,
  decode: (raw) => (raw as number[]).map((n) => n === 1),
});

/** The bid a dead owner had reserved: a taker answers exactly this, never a second one. */
export interface ReservedBid {
  readonly amountReceived: string;
  readonly bidExpiry: number;
  readonly gasFee: string;
}

export type ClaimCheck =
  { readonly status: "done" | "held" | "take" } | { readonly status: "resend"; readonly bid: ReservedBid };

export interface RequestClaims {
  readonly leaseMs: number;
  readonly reservedLeaseMs: number;
  readonly keepMs: number;
  /** The Redis key of one request's claim (the reservation script fences on it). */
  key(requestId: string): string;
  /**
   * Claims a request explicitly (before a wait: the owner's normal path claims in the reservation step): true
   * when the claim is this token's, created now or earlier.
   */
  claim(requestId: string, token: string): Promise<boolean>;
  /**
   * One round trip for many watched requests: takes over those whose owner's lease ran out, or that nobody claimed.
   * Call it only for requests younger than CLAIM_KEEP_MS (an older claim is gone and would be taken again).
   */
  check(entries: ReadonlyArray<{ requestId: string; token: string }>): Promise<ClaimCheck[]>;
  /** Renews the leases of requests this instance is still working on; false where the claim was taken over. */
  renew(entries: ReadonlyArray<{ requestId: string; token: string }>): Promise<boolean[]>;
}

export function createRequestClaims(
  redis: Redis,
  prefix: string,
  p: { leaseMs?: number; reservedLeaseMs?: number; keepMs?: number } = {},
): RequestClaims {
  const leaseMs = String(p.leaseMs ?? CLAIM_LEASE_MS);
  const keepMs = String(p.keepMs ?? CLAIM_KEEP_MS);
  const reservedLeaseMs = String(p.reservedLeaseMs ?? CLAIM_RESERVED_LEASE_MS);
  const key = (requestId: string): string => auctionClaimKey(prefix, requestId);
  return {
    leaseMs: Number(leaseMs),
    reservedLeaseMs: Number(reservedLeaseMs),
    keepMs: Number(keepMs),
    key,
    claim: (requestId, token) =>
      CLAIM.run(redis, { keys: { claim: key(requestId) }, args: { token, leaseMs, keepMs } }),
    check: (entries) =>
      CHECK.run(redis, {
        keys: {},
        restKeys: entries.map((e) => key(e.requestId)),
        args: { leaseMs, keepMs, reservedLeaseMs },
        restArgs: entries.map((e) => e.token),
      }),
    renew: (entries) =>
      RENEW.run(redis, {
        keys: {},
        restKeys: entries.map((e) => key(e.requestId)),
        args: { leaseMs, reservedLeaseMs },
        restArgs: entries.map((e) => e.token),
      }),
  };
}

/** One entry of claim-check.lua's reply. */
function parseCheck([status, amountReceived, bidExpiry, gasFee]: readonly string[]): ClaimCheck {
  if (status !== "resend") return { status: status as "done" | "held" | "take" };
  return { status: "resend", bid: { amountReceived, bidExpiry: Number(bidExpiry), gasFee } };
}
