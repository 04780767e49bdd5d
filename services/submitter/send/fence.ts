import type { RouterError } from "../../../shared/errors";
import { fenceArgsOf, fencedOut, type Fence, type FenceSource } from "../../../shared/coordination/lease";
import { SenderLeaseLostError } from "./errors";

export { type Fence, type FenceSource } from "../../../shared/coordination/lease";

/**
 * The sender lease's fence as the send stores use it (nonce store, transaction records, liquidity holds): each
 * write checks it atomically in its own Lua script (shared/redis/scripts/includes/fence-check.lua). A refused write throws
 * SenderLeaseLostError, which the processor answers by handing the job back to the lease holder. Without a fence
 * source (tests, tools) writes are not fenced.
 */

/** KEYS/ARGV values of the fence for one write of `what`, and the fence itself when fenced. */
export function senderFenceArgs(
  source: FenceSource | undefined,
  fallbackKey: string,
  what: string,
): { key: string; value: string; fence?: Fence } {
  return fenceArgsOf(source, fallbackKey, what, SenderLeaseLostError);
}

/** The SenderLeaseLostError for a write of `what` its script refused: the sender lease changed hands. */
export function senderFencedOut(source: FenceSource | undefined, what: string): RouterError {
  return fencedOut(source, what, SenderLeaseLostError);
}
