import { createHash, timingSafeEqual } from "node:crypto";
import type { RequestHandler } from "express";
import { AdminApiError } from "../errors";
import type { AuthThrottle } from "./auth-throttle";
import { bodyOf } from "./json-body";

/**
 * docs/admin-api.md: `adminToken` in the JSON body must equal the configured token. Runs before any field
 * validation, so an unauthenticated caller learns nothing about the body rules. Both sides are hashed
 * first: timingSafeEqual needs equal lengths, and comparing digests hides the token's length too. Wrong
 * tokens are slowed down per source address (auth-throttle.ts).
 */
export function authenticate(params: { adminToken: string; throttle: AuthThrottle }): RequestHandler {
  const expected = sha256(params.adminToken);
  return (req, res, next) => {
    const provided = bodyOf(req).adminToken;
    params.throttle.check(
      req,
      res,
      {
        surface: "api",
        provided: typeof provided === "string" ? provided : undefined,
        matches: (token) => timingSafeEqual(sha256(token), expected),
      },
      {
        next: () => next(),
        refuse: (error) =>
          next(error ?? new AdminApiError("UNAUTHORIZED", "a valid adminToken is required in the JSON body")),
      },
    );
  };
}

export function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
