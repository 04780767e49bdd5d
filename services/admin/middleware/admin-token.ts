import { createHash, timingSafeEqual } from "node:crypto";
import type { Request, RequestHandler } from "express";
import { AdminApiError } from "../errors";
import type { AuthSurface, AuthThrottle } from "./auth-throttle";

/**
 * The one 401 every admin surface answers (API routes, queue dashboard, operator page, /status, the reports):
 * one code and one message, whatever was wrong (missing, not a string, wrong), so a caller learns nothing from it
 * but where the token goes.
 */
export function unauthorized(): AdminApiError {
  return new AdminApiError(
    "UNAUTHORIZED",
    "a valid adminToken is required: in the JSON body of a POST, as HTTP Basic password or Bearer token on a GET",
  );
}

/**
 * The one comparison of a presented admin token. Both sides are hashed first: timingSafeEqual needs equal lengths,
 * and comparing SHA-256 digests hides the token's length as well as its content.
 */
export function adminTokenMatcher(adminToken: string): (token: string) => boolean {
  const expected = sha256(adminToken);
  return (token) => timingSafeEqual(sha256(token), expected);
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

export interface AdminTokenGateParams {
  readonly adminToken: string;
  readonly throttle: AuthThrottle;
  /** Which surface, for the throttle's metrics. */
  readonly surface: AuthSurface;
  /** Where this surface carries the token; undefined when the request has none (or not a string). */
  credentialOf(req: Request): string | undefined;
  /** A `WWW-Authenticate` challenge sent with the 401 (pages: the browser then prompts for Basic credentials). */
  readonly challenge?: string;
}

/**
 * Lets a request through with the admin token, else answers unauthorized() (with the surface's challenge, if any).
 * Wrong tokens are slowed down per source address, on every surface at once (auth-throttle.ts); a source over its
 * share gets the throttle's 429 instead, with no challenge.
 */
export function adminTokenGate(params: AdminTokenGateParams): RequestHandler {
  const matches = adminTokenMatcher(params.adminToken);
  return (req, res, next) => {
    params.throttle.check(
      req,
      res,
      { surface: params.surface, provided: params.credentialOf(req), matches },
      {
        next: () => next(),
        refuse: (error) => {
          if (error) {
            next(error);
            return;
          }
          if (params.challenge !== undefined) res.setHeader("WWW-Authenticate", params.challenge);
          next(unauthorized());
        },
      },
    );
  };
}
