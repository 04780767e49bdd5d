import type Joi from "joi";
import { knownKeysAt, unknownKeyMessage } from "./known-keys";
import { configSchema } from "./schema";

export function formatPath(path: ReadonlyArray<string | number>): string {
  let out = "";
  for (const part of path) {
    out += typeof part === "number" ? `[${part}]` : out === "" ? part : `.${part}`;
  }
  return out === "" ? "(root)" : out;
}

/**
 * One schema problem. An unknown key names the closest known key of its object; a problem with a renamed key
 * of the original router names the key as the file spells it, then the key it was read as.
 */
export function formatDetail(detail: Joi.ValidationErrorItem, renamedPaths: ReadonlyMap<string, string>): string {
  const path = formatPath(detail.path);
  let message = detail.message;
  if (detail.type === "object.unknown") {
    const known = knownKeysAt(configSchema, detail.path.slice(0, -1));
    // chainConfig's keys are patterns (chain ids): its own message says what a key must look like.
    if (known.length > 0) {
      message = unknownKeyMessage(String(detail.path[detail.path.length - 1]), known);
    }
  }
  for (const [to, from] of renamedPaths) {
    if (path === to || path.startsWith(`${to}.`) || path.startsWith(`${to}[`)) {
      return `${from}${path.slice(to.length)} (read as ${path}): ${message}`;
    }
  }
  return `${path}: ${message}`;
}
