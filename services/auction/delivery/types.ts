import type { Logger } from "../../../shared/logging/create-logger";
import type { Messaging, MessagingRequest } from "../../../shared/messaging/types";
import type { RequestClaims, ReservedBid } from "../request-claims";

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
