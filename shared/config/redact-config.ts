import { createRedactor, REDACTED } from "../logging/redact";
import type { RouterConfig } from "./types";

/** A new object safe to print: secrets masked, credentials stripped from every URL. Never mutates `config`. */
export function redactConfig(config: RouterConfig): Record<string, unknown> {
  const redactor = createRedactor([config.adminToken, config.mnemonic]);
  const copy = redactor.value({ ...config }) as Record<string, unknown>;
  copy.adminToken = REDACTED;
  if (config.mnemonic !== undefined) {
    copy.mnemonic = REDACTED;
  }
  return copy;
}
