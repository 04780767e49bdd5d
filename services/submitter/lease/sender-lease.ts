import type { Redis } from "ioredis";
import { senderLeaseKey, senderLeaseTokenKey } from "../../../shared/coordination/keys";
import { createLease, type Lease } from "../../../shared/coordination/lease";
import { SenderLeaseLostError } from "../send/errors";

export interface SenderLease extends Lease {
  /** Throws SenderLeaseLostError unless current() is defined: called right before every broadcast. */
  assertHeld(): void;
}

/**
 * The sender lease of one (chain, signer) (shared/coordination/keys.ts senderLeaseKey): the shared fenced lease
 * (shared/coordination/lease.ts), with the check a job makes before each broadcast. Its fence is what the send stores'
 * writes check (send/fence.ts).
 */
export function createSenderLease(params: {
  redis: Redis;
  prefix: string;
  chainId: number;
  signerAddress: string;
  ownerId: string;
  ttlMs: number;
}): SenderLease {
  const lease = createLease({
    redis: params.redis,
    key: senderLeaseKey(params.prefix, params.chainId, params.signerAddress),
    termKey: senderLeaseTokenKey(params.prefix, params.chainId, params.signerAddress),
    ownerId: params.ownerId,
    ttlMs: params.ttlMs,
  });
  return {
    ...lease,
    assertHeld: () => {
      if (!lease.current()) {
        throw new SenderLeaseLostError("this process no longer holds the sender lease: nothing is sent", {
          key: lease.key,
          ownerId: lease.ownerId,
        });
      }
    },
  };
}
