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
   * Call right after publishing the answer, in the same synchronous turn: the notice that the request is settled
   * then leaves in the same socket write as the answer, behind it, so the other instances learn of the answer
   * exactly when the NATS server has it (a death before the write loses both, and a watcher answers instead).
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
/** The notice channel on which an instance tells the others (and itself) that a request is settled. */
const SETTLED_CHANNEL = "auction-settled";
/** A check waits this long for the NATS round trip that brings in the notices before it; else it waits a tick. */
const NOTICE_FLUSH_TIMEOUT_MS = 1_000;

/**
 * Serves `topic` twice: in the queue group, so NATS hands each request to one instance, which answers it under a
 * claim in Redis (request-claims.ts: created by its reservation step, or before a wait); and without it, so every
 * instance watches every request. Once a request's owner has let its lease run out (it died, or stalls), or nobody
 * claimed it at all (the instance NATS picked died with the request unread), one watcher takes it over and answers.
 *
 * A settled request is announced on NATS (`SETTLED_CHANNEL`), not marked in Redis: the notice follows the answer on
 * the owner's connection, in the same socket write, so a watcher that has the notice knows the server had the answer
 * before it, and a watcher without it (after a flush of its own connection) knows the server never got it. A mark
 * in Redis is a second server: whichever write goes first, a death between the two either repeats the bid or
 * loses it. On the normal path the owner's only claim round trip is its reservation step; the watchers' checks
 * (only of requests whose notice is late) and the owners' renewals are batched per tick.
 */
export function serveClaimed(topic: MessagingTopic, p: ClaimedDeliveryParams): ClaimedDelivery {
  const leaseMs = p.leaseMs ?? CLAIM_LEASE_MS;
  const renewEveryMs = Math.floor(leaseMs / 3);
  const instance = randomBytes(6).toString("hex");
  let sequence = 0;
  const nextToken = (): string => `${instance}.${(sequence++).toString(36)}`;
  const logRedisError = throttledErrorLog(p.logger, "auction claims: redis failed", { at: "auction.claim" });
  const logNoticeError = throttledErrorLog(p.logger, "auction claims: settled notice not published", {
    at: "auction.claim",
  });

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
  const watched = new Map<string, Watch>();
  // Notices of requests not (yet) watched here, by arrival: through a NATS cluster a notice can overtake its
  // request (another server's route), and the request must then not be watched.
  const settledUnseen = new Map<string, number>();
  // By token: a slow owner and the takeover its own watch made can both be in flight (the fence stops the old one).
  const owned = new Map<string, Owned>();
  const ownedIds = new Map<string, number>();
  // Requests owned here whose watch delivery has not come yet (by arrival): it is dropped when it comes. This, not
  // the echo of its own settled notice, keeps an owner from watching its own request (its connection may skip the
  // echo: start-auction.ts connects with noEcho, which saves every instance a wake-up per request).
  const ownWatchDue = new Map<string, number>();
  const requestIdOf = createRequestIds();
  const takeovers = new Set<Promise<void>>();
  let stopped = false;
  let renewing = false;
  let checking = false;

  const own = async (request: MessagingRequest, requestId: string, token: string, resend?: ReservedBid) => {
    owned.set(token, { requestId, token, renewAtMs: Date.now() + renewEveryMs });
    ownedIds.set(requestId, (ownedIds.get(requestId) ?? 0) + 1);
    watched.delete(requestId);
    let announced = false;
    const announce = (): void => {
      if (announced) return;
      announced = true;
      try {
        p.messaging.notify(SETTLED_CHANNEL, `${instance} ${requestId}`);
      } catch (err) {
        logNoticeError(err instanceof Error ? err : new Error(errorMessage(err)));
      }
    };
    const claim: RequestClaim = {
      key: p.claims.key(requestId),
      token,
      reservedLeaseMs: p.claims.reservedLeaseMs,
      keepMs: p.claims.keepMs,
      hold: () => p.claims.claim(requestId, token),
      ...(resend ? { resend } : {}),
      published: announce,
    };
    try {
      // A refusal that stands is announced here (answers were, with their publish); a lost claim is not.
      if (await p.handler(request, claim)) announce();
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
    if (ownWatchDue.delete(requestId)) return;
    if (stopped || ownedIds.has(requestId) || watched.has(requestId) || settledUnseen.delete(requestId)) return;
    watched.set(requestId, { request, requestId, dueMs: request.receivedAtMs + leaseMs + TICK_MS / 2 });
  };

  const onSettled = (notice: string): void => {
    const space = notice.indexOf(" ");
    const requestId = notice.slice(space + 1);
    // Its own notices only end its own watch, if any (it cannot have missed its own request).
    if (watched.delete(requestId) || notice.slice(0, space) === instance || ownedIds.has(requestId)) return;
    settledUnseen.set(requestId, Date.now());
  };

  const onRequest = (request: MessagingRequest): Promise<void> => {
    const requestId = requestIdOf(request);
    // The watch delivery usually comes right after this one (same read); if it came first, own() drops the watch.
    if (!watched.has(requestId) && !settledUnseen.has(requestId)) ownWatchDue.set(requestId, Date.now());
    return own(request, requestId, nextToken());
  };

  const renewTick = async (nowMs: number): Promise<void> => {
    const due = [...owned.values()].filter((o) => o.renewAtMs <= nowMs);
    if (renewing || due.length === 0) return;
    renewing = true;
    for (const o of due) o.renewAtMs = nowMs + renewEveryMs;
    // A lost lease needs no action here: the owner's reservation step is fenced on its token.
    await p.claims
      .renew(due)
      .catch(logRedisError)
      .finally(() => {
        renewing = false;
      });
  };

  // Every notice the server passed on before this instance's PING is handled before the PONG resolves the flush
  // (nats.js runs subscription callbacks as it reads), so a watch still here after it has no answer on the server.
  const noticesIn = async (): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), NOTICE_FLUSH_TIMEOUT_MS);
    });
    const flushed = p.messaging.flush().then(
      () => true,
      () => false,
    );
    try {
      return await Promise.race([flushed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  };

  const checkTick = async (nowMs: number): Promise<void> => {
    for (const seen of [settledUnseen, ownWatchDue]) {
      for (const [requestId, atMs] of seen) {
        if (nowMs - atMs <= WATCH_MAX_AGE_MS) break; // by arrival: the rest are younger
        seen.delete(requestId);
      }
    }
    let anyDue = false;
    for (const w of watched.values()) {
      // Well before its claim key expires (a missing key reads as "nobody claimed it"); no requester waits so long.
      if (nowMs - w.request.receivedAtMs > WATCH_MAX_AGE_MS) watched.delete(w.requestId);
      else if (w.dueMs <= nowMs) anyDue = true;
    }
    if (checking || !anyDue) return;
    checking = true;
    try {
      if (!(await noticesIn())) return; // NATS is away: nobody could answer now anyway; the next tick tries again
      const due = [...watched.values()].filter((w) => w.dueMs <= nowMs);
      if (due.length === 0) return;
      for (const w of due) watched.delete(w.requestId);
      const tokens = due.map(() => nextToken());
      let results;
      try {
        results = await p.claims.check(due.map((w, i) => ({ requestId: w.requestId, token: tokens[i] })));
      } catch (err) {
        logRedisError(err instanceof Error ? err : new Error(errorMessage(err)));
        for (const w of due) if (!settledUnseen.delete(w.requestId)) watched.set(w.requestId, w);
        return;
      }
      results.forEach((result, i) => {
        const w = due[i];
        // Its notice came during the check (an owner stalled, not dead): settled, even if just taken here.
        if (settledUnseen.delete(w.requestId)) return;
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
      checking = false;
    }
  };

  const timer = setInterval(() => {
    if (stopped) return;
    const nowMs = Date.now();
    void renewTick(nowMs);
    void checkTick(nowMs);
  }, TICK_MS);
  timer.unref();
  // Notices first: a watched request's notice is then never missed (it comes after the request).
  p.messaging.onNotice(SETTLED_CHANNEL, onSettled);
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

/**
 * A request's id, identical on every instance: sha1 of the subject (the requester) and the body as received (its
 * inbox is unique). The owner gets each request twice, from its two subscriptions, one right after the other in
 * the same read: the last id is kept, and a delivery with the same subject and bytes reuses it.
 */
function createRequestIds(): (request: MessagingRequest) => string {
  let last: { subject: string; raw: Uint8Array; id: string } | undefined;
  return (request) => {
    const raw = request.raw;
    if (raw === undefined) return hashRequest(request.subject, request.responseInbox);
    if (last !== undefined && last.subject === request.subject && Buffer.compare(last.raw, raw) === 0) return last.id;
    const id = hashRequest(request.subject, raw);
    last = { subject: request.subject, raw, id };
    return id;
  };
}

function hashRequest(subject: string, body: Uint8Array | string): string {
  return createHash("sha1").update(subject).update("\n").update(body).digest("base64url");
}
