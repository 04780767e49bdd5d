import type { Redis } from "ioredis";
import { pollerAlertedKey } from "../../shared/coordination/keys";

/** Resolves true the first time an alert id is seen on this chain (across restarts), false afterwards. */
export type AlertOnce = (alertId: string) => Promise<boolean>;

/** The set lives as long as any transfer can (the contract's 30-day maximum), counted from the last alert. */
const ALERTED_TTL_SEC = 31 * 24 * 3600;

/**
 * A Redis set of the alerts already logged (failed job ids, refused transfers, funds-at-risk states), so a
 * condition that persists is reported once, not once per block, and not again after a restart.
 */
export function createAlertOnce(redis: Redis, prefix: string, chainId: number): AlertOnce {
  const key = pollerAlertedKey(prefix, chainId);
  return async (alertId) => {
    const [[addErr, added]] = (await redis.multi().sadd(key, alertId).expire(key, ALERTED_TTL_SEC).exec()) ?? [
      [null, 0],
    ];
    if (addErr) {
      throw addErr;
    }
    return added === 1;
  };
}
