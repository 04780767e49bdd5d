import type { Logger } from "../../../shared/logging/create-logger";
import type { MessagingRequest } from "../../../shared/messaging/types";
import type { routerMetrics } from "../../../shared/metrics/router-metrics";
import { auctionLogFields } from "../../../shared/protocol/auction-payload";
import { refusalLogLevel } from "../../../shared/protocol/auction-refusal";
import type { Outcome } from "./outcome";

/**
 * The auction's one log line (`at: "auction.outcome"`, docs/auction.md) and its counters. Assignments, not object
 * spreads: V8 copies spread objects property by property on a slow path, and this line is built once per request.
 */
export function logOutcome(
  log: Logger,
  metrics: ReturnType<typeof routerMetrics>,
  request: MessagingRequest,
  outcome: Outcome,
  coldRetries: number,
  durationMs: number,
): void {
  const fields = auctionLogFields(request.data);
  fields.from = request.from;
  fields.result = outcome.result;
  fields.code = outcome.refusal?.code ?? "ok";
  if (outcome.refusal) fields.detail = outcome.refusal.detail;
  Object.assign(fields, outcome.fields);
  if (coldRetries > 0) fields.coldRetries = coldRetries;
  fields.durationMs = durationMs;
  const level = outcome.refusal ? refusalLogLevel(outcome.refusal.code) : "info";
  log[level](outcome.refusal ? "auction refused" : "auction answered", fields);
  recordAuction(metrics, outcome, fields.receivingChainId, durationMs);
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
