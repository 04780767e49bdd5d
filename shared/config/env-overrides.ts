import { isRecord } from "./json-shapes";
import type { ConfigEnv } from "./types";

/**
 * Secrets may live in the environment instead of the file; the environment wins. A file value it replaces is
 * named in a warning (never the value), so the file never holds a setting that silently has no effect.
 */
export function applyEnvOverrides(
  raw: Record<string, unknown>,
  env: ConfigEnv,
  warnings: string[],
): Record<string, unknown> {
  const out = { ...raw };
  const replaced = (key: string, variable: string): void => {
    if (raw[key] !== undefined) {
      warnings.push(`${key}: replaced by ${variable} from the environment; the file's value is not used`);
    }
  };
  if (env.ROUTER_ADMIN_TOKEN) {
    replaced("adminToken", "ROUTER_ADMIN_TOKEN");
    out.adminToken = env.ROUTER_ADMIN_TOKEN;
  }
  if (env.ROUTER_MNEMONIC) {
    replaced("mnemonic", "ROUTER_MNEMONIC");
    out.mnemonic = env.ROUTER_MNEMONIC;
  }
  if (env.ROUTER_CONTAINER_HOST) {
    // No warning: the image sets it, and the file's host (127.0.0.1 in config.example.json) is what the compose
    // file publishes on; the admin process logs the address it binds and why (services/admin/start-admin.ts).
    out.host = env.ROUTER_CONTAINER_HOST;
    out.metricsHost = env.ROUTER_CONTAINER_HOST;
  }
  if (env.REDIS_URL) {
    replaced("redisUrl", "REDIS_URL");
    // The environment wins over either form in the file; only where Redis is, not how many replicas must ack.
    const { minReplicas, replicaAckTimeoutMs, ...where } = (isRecord(out.redis) ? out.redis : {}) as Record<
      string,
      unknown
    >;
    if (Object.keys(where).length > 0) {
      warnings.push(`redis: ${Object.keys(where).join(", ")} replaced by REDIS_URL from the environment; not used`);
    }
    delete out.redis;
    delete out.redisUrl;
    if (minReplicas !== undefined || replicaAckTimeoutMs !== undefined) {
      out.redis = { url: env.REDIS_URL, minReplicas, replicaAckTimeoutMs };
    } else {
      out.redisUrl = env.REDIS_URL;
    }
  }
  return out;
}
