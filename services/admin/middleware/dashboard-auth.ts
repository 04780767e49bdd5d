import type { RequestHandler } from "express";
import { AdminApiError } from "../errors";
import type { AuthThrottle } from "./auth-throttle";
import { adminTokenGate } from "./admin-token";

/**
 * Browser-friendly admin auth for the pages (queue dashboard, operator page, GET /status and the reports): HTTP
 * Basic with the adminToken as the password (any user name), so a browser prompts once and resends it; scripts may
 * send `Authorization: Bearer <adminToken>` instead. Without it: the one 401 (admin-token.ts) with a
 * `WWW-Authenticate` challenge, the only difference from the API's.
 */
export function requireAdminToken(params: {
  adminToken: string;
  throttle: AuthThrottle;
  realm?: string;
}): RequestHandler {
  return adminTokenGate({
    adminToken: params.adminToken,
    throttle: params.throttle,
    surface: "page",
    credentialOf: (req) => tokenOf(req.get("authorization")),
    challenge: `Basic realm="${params.realm ?? "router admin"}", charset="UTF-8"`,
  });
}

/**
 * CSRF guard for state-changing requests under the dashboard: the browser resends Basic credentials on any
 * request to the origin, so a cross-site form could otherwise retry or clean jobs. Browsers always send
 * `Origin` (and `Sec-Fetch-Site`) on fetch/XHR POST, PUT and DELETE: these must name this very origin.
 */
export const sameOriginWrites: RequestHandler = (req, _res, next) => {
  if (req.method === "GET" || req.method === "HEAD" || req.method === "OPTIONS") {
    next();
    return;
  }
  const site = req.get("sec-fetch-site");
  const origin = req.get("origin");
  const host = req.get("host");
  const originHost = origin ? hostOf(origin) : undefined;
  const sameOrigin = (site === undefined || site === "same-origin") && origin !== undefined && originHost === host;
  if (!sameOrigin) {
    next(new AdminApiError("FORBIDDEN", "dashboard actions must come from the dashboard's own origin"));
    return;
  }
  next();
};

/** `Basic base64(any:token)` for browsers, or `Bearer token` for scripts. */
function tokenOf(header: string | undefined): string | undefined {
  const bearer = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer) {
    return bearer[1];
  }
  const match = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) {
    return undefined;
  }
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}
