import { createRedactor, REDACTED } from "../logging/redact";
import type { RedisTlsOptions, RouterConfig } from "./types";

/** Every secret value the config holds, for redactors that cut them out of any text (logs, API errors). */
export function configSecrets(config: RouterConfig): Array<string | undefined> {
  const redis = "url" in config.redis ? undefined : config.redis;
  return [
    config.adminToken,
    config.mnemonic,
    redis?.password,
    redis?.sentinelPassword,
    tlsKey(redis?.tls),
    tlsKey(redis?.sentinelTls),
    ...databasePasswords(config.ledger?.databaseUrl),
  ];
}

/** The password inside a postgres:// URL, as written and percent-decoded (as the client sends it); none: []. */
export function databasePasswords(url: string | undefined): string[] {
  if (url === undefined) return [];
  try {
    const password = new URL(url).password;
    return password === "" ? [] : [password, decodeURIComponent(password)];
  } catch {
    return [];
  }
}

/** A new object safe to print: secrets masked, credentials stripped from every URL. Never mutates `config`. */
export function redactConfig(config: RouterConfig): Record<string, unknown> {
  const redactor = createRedactor(configSecrets(config));
  const copy = redactor.value({ ...config }) as Record<string, unknown>;
  copy.adminToken = REDACTED;
  if (config.mnemonic !== undefined) {
    copy.mnemonic = REDACTED;
  }
  if (!("url" in config.redis)) {
    const redis = { ...(copy.redis as Record<string, unknown>) };
    for (const key of ["password", "sentinelPassword"] as const) {
      if (config.redis[key] !== undefined) {
        redis[key] = REDACTED;
      }
    }
    for (const key of ["tls", "sentinelTls"] as const) {
      if (tlsKey(config.redis[key]) !== undefined) {
        redis[key] = { ...(redis[key] as Record<string, unknown>), key: REDACTED };
      }
    }
    copy.redis = redis;
  }
  return copy;
}

function tlsKey(tls: boolean | RedisTlsOptions | undefined): string | undefined {
  return typeof tls === "object" ? tls.key : undefined;
}
