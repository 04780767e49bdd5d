import type { Redis } from "ioredis";
import { auctionClaimKey } from "../../shared/queues";
import { scriptRunner } from "../../shared/transfers/bid-reservations";

/**
 * Which auction instance answers a request (docs/auction.md, "Instances and failures"). NATS hands each request
 * to one instance (queue group), which claims it here (in its reservation step, bid-reservations.ts, or before a
 * wait) and keeps it alive with a short lease while it works; every instance also watches every request. The key
 * (`auctionClaimKey`) holds one of:
 *   `c|<token>|<leaseUntilMs>`                                    claimed: the owner is working on it;
 *   `r|<token>|<leaseUntilMs>|<amountReceived>|<bidExpiry>|<gasFee>` reserved: the bid's promise is recorded (in
 *                                                                 the same Lua step, bid-reservations.ts), the
 *                                                                 owner signs and publishes.
 * Anything else (`d`, written by earlier versions) reads as settled. That a request is settled (answered, or
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

const NOW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function lease(ms) return string.format('%.0f', now + tonumber(ms)) end
`;

/** KEYS: claim. ARGV: token, leaseMs, keepMs. 1 when the claim is (now) this token's, in state c or r. */
const CLAIM_LUA = `${NOW_LUA}
if redis.call('SET', KEYS[1], 'c|' .. ARGV[1] .. '|' .. lease(ARGV[2]), 'NX', 'PX', ARGV[3]) then return 1 end
local v = redis.call('GET', KEYS[1])
if v and string.match(v, '^[cr]|([^|]*)|') == ARGV[1] then return 1 end
return 0
`;

/**
 * KEYS: claims. ARGV: leaseMs, keepMs, reservedLeaseMs, then one fresh token per claim. Per claim: 'done' (settled),
 * 'held' (the lease still runs), 'take' (taken over in state c under the fresh token; also when nobody claimed
 * it: the instance NATS handed it to died first) or 'resend|…' (taken over in state r: the bid's fields follow).
 */
const CHECK_LUA = `${NOW_LUA}
local out = {}
for i, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  local state, leaseUntil, rest = nil, nil, nil
  if v then state, leaseUntil, rest = string.match(v, '^([cr])|[^|]*|(%d+)(.*)$') end
  if not v then
    redis.call('SET', key, 'c|' .. ARGV[i + 3] .. '|' .. lease(ARGV[1]), 'PX', ARGV[2])
    out[i] = 'take'
  elseif not state then
    out[i] = 'done'
  elseif tonumber(leaseUntil) > now then
    out[i] = 'held'
  else
    local ms = ARGV[1]
    if state == 'r' then ms = ARGV[3] end
    redis.call('SET', key, state .. '|' .. ARGV[i + 3] .. '|' .. lease(ms) .. rest, 'KEEPTTL')
    if state == 'r' then out[i] = 'resend' .. rest else out[i] = 'take' end
  end
end
return out
`;

/**
 * KEYS: claims. ARGV: leaseMs, reservedLeaseMs, then each claim's token. Per claim 1 when the lease was renewed
 * (state c: leaseMs; state r: reservedLeaseMs), 0 when lost.
 */
const RENEW_LUA = `${NOW_LUA}
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = 0
  local v = redis.call('GET', key)
  if v then
    local state, token, rest = string.match(v, '^([cr])|([^|]*)|%d+(.*)$')
    if state and token == ARGV[i + 2] then
      local ms = ARGV[1]
      if state == 'r' then ms = ARGV[2] end
      redis.call('SET', key, state .. '|' .. token .. '|' .. lease(ms) .. rest, 'KEEPTTL')
      out[i] = 1
    end
  end
end
return out
`;

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
  const claimScript = scriptRunner(redis, CLAIM_LUA);
  const checkScript = scriptRunner(redis, CHECK_LUA);
  const renewScript = scriptRunner(redis, RENEW_LUA);
  const key = (requestId: string): string => auctionClaimKey(prefix, requestId);
  return {
    leaseMs: Number(leaseMs),
    reservedLeaseMs: Number(reservedLeaseMs),
    keepMs: Number(keepMs),
    key,
    claim: async (requestId, token) => (await claimScript([key(requestId)], [token, leaseMs, keepMs])) === 1,
    check: async (entries) => {
      const out = (await checkScript(
        entries.map((e) => key(e.requestId)),
        [leaseMs, keepMs, reservedLeaseMs, ...entries.map((e) => e.token)],
      )) as string[];
      return out.map(parseCheck);
    },
    renew: async (entries) => {
      const out = (await renewScript(
        entries.map((e) => key(e.requestId)),
        [leaseMs, reservedLeaseMs, ...entries.map((e) => e.token)],
      )) as number[];
      return out.map((n) => n === 1);
    },
  };
}

function parseCheck(raw: string): ClaimCheck {
  if (!raw.startsWith("resend")) return { status: raw as "done" | "held" | "take" };
  const [, amountReceived, bidExpiry, gasFee] = raw.split("|");
  return { status: "resend", bid: { amountReceived, bidExpiry: Number(bidExpiry), gasFee } };
}
