import { randomBytes } from "node:crypto";
import { CLAIM_KEEP_MS } from "../request-claims";
import type { MessagingRequest } from "../../../shared/messaging/types";

/** Renewals of owned leases and checks of others' claims run on this tick, batched into one round trip each. */
export const TICK_MS = 100;
/** Watches end after this; below CLAIM_KEEP_MS, and far beyond the SDK's 6 s wait. */
export const WATCH_MAX_AGE_MS = CLAIM_KEEP_MS / 2;
/** The notice channel on which an instance tells the others (and itself) that a request is settled. */
export const SETTLED_CHANNEL = "auction-settled";

/** Another instance's request, watched until its notice comes or its claim is checked. */
export interface Watch {
  readonly request: MessagingRequest;
  readonly requestId: string;
  dueMs: number;
}

/** A request this instance answers under a claim, and when its lease is renewed next. */
export interface Owned {
  readonly requestId: string;
  readonly token: string;
  renewAtMs: number;
}

/** One instance's view of the requests it owns and watches, shared by the owner, the watcher and the ticks. */
export interface DeliveryState {
  /** This instance's prefix of every claim token it writes. */
  readonly instance: string;
  readonly leaseMs: number;
  readonly renewEveryMs: number;
  /** A fresh fencing token, `<instance>.<n>`. */
  nextToken(): string;
  /** By request id: a request reaches its owner twice (queue group and watch), in either order. */
  readonly watched: Map<string, Watch>;
  /**
   * Notices of requests not (yet) watched here, by arrival: through a NATS cluster a notice can overtake its
   * request (another server's route), and the request must then not be watched.
   */
  readonly settledUnseen: Map<string, number>;
  /** By token: a slow owner and the takeover its own watch made can both be in flight (the fence stops the old one). */
  readonly owned: Map<string, Owned>;
  /** How many of `owned` answer each request id. */
  readonly ownedIds: Map<string, number>;
  /**
   * Requests owned here whose watch delivery has not come yet (by arrival): it is dropped when it comes. This, not
   * the echo of its own settled notice, keeps an owner from watching its own request (its connection may skip the
   * echo: start-auction.ts connects with noEcho, which saves every instance a wake-up per request).
   */
  readonly ownWatchDue: Map<string, number>;
  readonly takeovers: Set<Promise<void>>;
  stopped: boolean;
}

export function createDeliveryState(leaseMs: number): DeliveryState {
  const instance = randomBytes(6).toString("hex");
  let sequence = 0;
  return {
    instance,
    leaseMs,
    renewEveryMs: Math.floor(leaseMs / 3),
    nextToken: () => `${instance}.${(sequence++).toString(36)}`,
    watched: new Map(),
    settledUnseen: new Map(),
    owned: new Map(),
    ownedIds: new Map(),
    ownWatchDue: new Map(),
    takeovers: new Set(),
    stopped: false,
  };
}
