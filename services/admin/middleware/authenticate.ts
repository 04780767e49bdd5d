import type { RequestHandler } from "express";
import type { AuthThrottle } from "./auth-throttle";
import { adminTokenGate } from "./admin-token";
import { bodyOf } from "./json-body";

/**
 * docs/admin-api.md: `adminToken` in the JSON body must equal the configured token (admin-token.ts compares it).
 * Runs before any field validation, so an unauthenticated caller learns nothing about the body rules.
 */
export function authenticate(params: { adminToken: string; throttle: AuthThrottle }): RequestHandler {
  return adminTokenGate({
    ...params,
    surface: "api",
    credentialOf: (req) => {
      const provided = bodyOf(req).adminToken;
      return typeof provided === "string" ? provided : undefined;
    },
  });
}
