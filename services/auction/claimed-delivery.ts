import { createHash, randomBytes } from "node:crypto";
import { errorMessage } from "../../shared/errors";
import type { Logger } from "../../shared/logging/create-logger";
import { throttledErrorLog } from "../../shared/logging/throttled-error-log";
import type { Messaging, MessagingRequest, MessagingTopic } from "../../shared/messaging/types";
import { auctionLogFields } from "../../shared/protocol/auction-payload";
import { CLAIM_KEEP_MS, CLAIM_LEASE_MS, type RequestClaims, type ReservedBid } from "./request-claims";

/** What the handler gets with a request it owns. */
export interface RequestClaim {
  /** The claim's Redis key and this owner's fencing token (the reservation step checks both, and creates it). */
  readonly key: string;
  readonly token: string;
  /** The lease the reservation step gives the claim (state `r`), and how long a key it creates stays. */
  readonly reservedLeaseMs: number;
  readonly keepMs: number;
  /** Taken over from an owner that died after reserving: answer exactly this bid, reserve nothing. */
  readonly resend?: ReservedBid;
  /**
   * Call right after publishing the answer: the request is marked done once the NATS server has confirmed the
   * publish (a flush round trip shared by every publish of the tick), never before: a death before the mark makes
   * a watcher re-send the same bid, a mark before the publish could lose it.
   */
  published(): void;
  /**
   * Claims the request now, before the handler waits (cold data): a watcher would otherwise take an unclaimed
   * request over after the lease. False when another instance has it already.
   */
  hold(): Promise<boolean>;
}

/** Resolves true once the request is answered or refused for good, false when another instance took it over. */
export type ClaimedHandler = (request: MessagingRequest, claim: RequestClaim) => Promise<boolean>;

export interface ClaimedDeliveryParams {
  readonly messaging: Messaging;
  /** The NATS queue group that picks each request's owner (spreads the work over the instances). */
  readonly queueGroup: string;
  readonly claims: RequestClaims;
  readonly logger: Logger;
  readonly handler: ClaimedHandler;
  /** Must equal the lease the claims were made with. */
  readonly leaseMs?: number;
}

export interface ClaimedDelivery {
  /** This instance's prefix of every claim token it writes (`<instance>.<n>`), for the logs. */
  readonly instance: string;
  /** Stops renewing and checking; waits for the takeovers in flight. */
  stop(): Promise<void>;
}

/** Renewals of owned leases and checks of others' claims run on this tick, batched into one round trip each. */
const TICK_MS = 100;
/** Watches end after this; below CLAIM_KEEP_MS, and far beyond the SDK's 6 s wait. */
const WATCH_MAX_AGE_MS = CLAIM_KEEP_MS / 2;

/**
 * Serves `topic` twice: in the queue group, so NATS hands each request to one instance, which answers it under a
 * claim in Redis (request-claims.ts: created by its reservation step, or before a wait); and without it, so every
 * instance watches every request. Once a request's
 * owner has let its lease run out (it died, or stalls), or nobody claimed it at all (the instance NATS picked died
 * with the request unread), one watcher takes it over and answers. On the normal path a request costs its owner
 * one round trip more than before, the `d`; the watchers' checks and the owners' renewals are batched per tick.
 */
export function serveClaimed(topic: MessagingTopic, p: ClaimedDeliveryParams): ClaimedDelivery {
  const leaseMs = p.leaseMs ?? CLAIM_LEASE_MS;
  const renewEveryMs = Math.floor(leaseMs / 3);
  const instance = randomBytes(6).toString("hex");
  let sequence = 0;
  const nextToken = (): string => `${instance}.${(sequence++).toString(36)}`;
  const logRedisError = throttledErrorLog(p.logger, "auction claims: redis failed", { at: "auction.claim" });

  interface Watch {
    readonly request: MessagingRequest;
    readonly requestId: string;
    dueMs: number;
  }
  interface Owned {
    readonly requestId: string;
    readonly token: string;
    renewAtMs: number;
  }
  // By request id: a request reaches its owner twice (queue group and watch), in either order.
  let watched = new Map<string, Watch>();
  // By token: a slow owner and the takeover its own watch made can both be in flight (the fence stops the old one).
  const owned = new Map<string, Owned>();
  const ownedIds = new Map<string, number>();
  const takeovers = new Set<Promise<void>>();
  let stopped = false;
  let ticking = false;

  const own = async (request: MessagingRequest, requestId: string, token: string, resend?: ReservedBid) => {
    owned.set(token, { requestId, token, renewAtMs: Date.now() + renewEveryMs });
    ownedIds.set(requestId, (ownedIds.get(requestId) ?? 0) + 1);
    watched.delete(requestId);
    let confirmed: Promise<boolean> | undefined;
    const claim: RequestClaim = {
      key: p.claims.key(requestId),
      token,
      reservedLeaseMs: p.claims.reservedLeaseMs,
      keepMs: p.claims.keepMs,
      hold: () => p.claims.claim(requestId, token),
      ...(resend ? { resend } : {}),
      published: () => {
        confirmed = flushAfterPublish();
      },
    };
    try {
      // Settled: a refusal that stands, or an answer the server has confirmed (unconfirmed: the lease decides).
      if ((await p.handler(request, claim)) && (confirmed === undefined || (await confirmed))) {
        await p.claims.finish(requestId, token);
      }
    } catch (err) {
      logRedisError(err instanceof Error ? err : new Error(errorMessage(err)));
    } finally {
      owned.delete(token);
      const left = (ownedIds.get(requestId) ?? 1) - 1;
      if (left > 0) ownedIds.set(requestId, left);
      else ownedIds.delete(requestId);
    }
  };

  const watch = (request: MessagingRequest, requestId = requestIdOf(request)): void => {
    if (!stopped && !ownedIds.has(requestId) && !watched.has(requestId)) {
      watched.set(requestId, { request, requestId, dueMs: request.receivedAtMs + leaseMs + TICK_MS / 2 });
    }
  };

  // The owner's normal path writes nothing before the reservation step, which creates the claim (fenced: a watcher
  // that took the request over from a slow owner makes that step refuse). A wait claims first (RequestClaim.hold).
  // One flush (PING/PONG) confirms every publish written before it: those of the current tick share it.
  let nextFlush: Promise<boolean> | undefined;
  const flushAfterPublish = (): Promise<boolean> =>
    (nextFlush ??= new Promise<boolean>((resolve) =>
      queueMicrotask(() => {
        nextFlush = undefined;
        p.messaging.flush().then(
          () => resolve(true),
          () => resolve(false),
        );
      }),
    ));

  const onRequest = (request: MessagingRequest): Promise<void> => own(request, requestIdOf(request), nextToken());

  const tick = async (): Promise<void> => {
    if (ticking || stopped) return;
    ticking = true;
    try {
      const nowMs = Date.now();
      const renewing = [...owned.values()].filter((o) => o.renewAtMs <= nowMs);
      if (renewing.length > 0) {
        for (const o of renewing) o.renewAtMs = nowMs + renewEveryMs;
        // A lost lease needs no action here: the owner's reservation step is fenced on its token.
        await p.claims.renew(renewing).catch(logRedisError);
      }
      const due: Watch[] = [];
      const later = new Map<string, Watch>();
      for (const w of watched.values()) {
        // Well before its claim key expires (a missing key reads as "nobody claimed it"); no requester waits so long.
        if (nowMs - w.request.receivedAtMs > WATCH_MAX_AGE_MS) continue;
        if (w.dueMs <= nowMs) due.push(w);
        else later.set(w.requestId, w);
      }
      watched = later;
      if (due.length === 0) return;
      const tokens = due.map(() => nextToken());
      let results;
      try {
        results = await p.claims.check(due.map((w, i) => ({ requestId: w.requestId, token: tokens[i] })));
      } catch (err) {
        logRedisError(err instanceof Error ? err : new Error(errorMessage(err)));
        for (const w of due) watched.set(w.requestId, w);
        return;
      }
      results.forEach((result, i) => {
        const w = due[i];
        if (result.status === "held") {
          w.dueMs = nowMs + renewEveryMs;
          watched.set(w.requestId, w);
        } else if (result.status !== "done") {
          const resend = result.status === "resend" ? result.bid : undefined;
          p.logger.info("auction request taken over from an instance that stopped renewing its claim", {
            at: "auction.takeover",
            ...auctionLogFields(w.request.data),
            ageMs: Date.now() - w.request.receivedAtMs,
            resend: resend !== undefined,
          });
          const work = own(w.request, w.requestId, tokens[i], resend).finally(() => takeovers.delete(work));
          takeovers.add(work);
        }
      });
    } finally {
      ticking = false;
    }
  };

  const timer = setInterval(() => void tick(), TICK_MS);
  timer.unref();
  p.messaging.serve(topic, onRequest, { queueGroup: p.queueGroup });
  p.messaging.serve(topic, (request) => watch(request));
  return {
    instance,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await Promise.allSettled([...takeovers]);
    },
  };
}

/** Identical on every instance: the subject (the requester) and the body as received (its inbox is unique). */
function requestIdOf(request: MessagingRequest): string {
  const hash = createHash("sha1").update(request.subject).update("\n");
  hash.update(request.raw ?? request.responseInbox);
  return hash.digest("base64url");
}
