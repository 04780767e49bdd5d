import { createHash, timingSafeEqual } from "node:crypto";
import type { RequestHandler } from "express";
import type { Logger } from "../../../shared/logging/create-logger";
import { AdminApiError } from "../errors";
import { bodyOf } from "./json-body";
import { requestIdOf } from "./request-context";

/**
 * docs/admin-api.md: `adminToken` in the JSON body must equal the configured token. Runs before any field
 * validation, so an unauthenticated caller learns nothing about the body rules. Both sides are hashed
 * first: timingSafeEqual needs equal lengths, and comparing digests hides the token's length too.
 */
export function authenticate(params: { adminToken: string; logger: Logger }): RequestHandler {
  const expected = sha256(params.adminToken);
  return (req, res, next) => {
    const provided = bodyOf(req).adminToken;
    if (typeof provided === "string" && timingSafeEqual(sha256(provided), expected)) {
      next();
      return;
    }
    params.logger.warn("admin request refused: missing or wrong adminToken", {
      at: "admin.auth",
      path: req.path,
      requestId: requestIdOf(res),
      reason: typeof provided === "string" ? "wrong token" : "no token",
    });
    next(new AdminApiError("UNAUTHORIZED", "a valid adminToken is required in the JSON body"));
  };
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
