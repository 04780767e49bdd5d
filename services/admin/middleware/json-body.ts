import express, { type RequestHandler } from "express";
import { AdminApiError } from "../errors";

/**
 * The admin API's specification sets no body limit (docs/admin-api.md, decisions); admin bodies are a few hundred
 * bytes, so 16 kB is generous.
 */
export const BODY_LIMIT = "16kb";

/**
 * The body pipeline of every POST route, in order: content type (415), size and JSON syntax (413/400,
 * translated in the error handler), then "is an object" (400). Compressed bodies are refused (415) so
 * the limit is the size on the wire and nothing is inflated.
 */
export function jsonBody(): RequestHandler[] {
  const parse = express.json({ limit: BODY_LIMIT, strict: false, inflate: false, type: () => true });
  return [requireJsonContentType, parse, requireObjectBody];
}

const requireJsonContentType: RequestHandler = (req, _res, next) => {
  const [mediaType, ...params] = (req.get("content-type") ?? "").split(";").map((part) => part.trim().toLowerCase());
  if (mediaType !== "application/json") {
    next(new AdminApiError("UNSUPPORTED_MEDIA_TYPE", "content-type must be application/json"));
    return;
  }
  // body-parser would decode any "utf-*" charset and take `content-encoding: identity`; the docs promise UTF-8
  // and no content-encoding at all, so the bytes checked are the bytes parsed.
  const charsets = params.filter((p) => p.startsWith("charset=")).map((p) => p.slice(8).replace(/^"(.*)"$/, "$1"));
  if (charsets.some((charset) => charset !== "utf-8") || req.get("content-encoding") !== undefined) {
    next(new AdminApiError("UNSUPPORTED_MEDIA_TYPE", "body must be uncompressed JSON in UTF-8"));
    return;
  }
  next();
};

const requireObjectBody: RequestHandler = (req, _res, next) => {
  // No body at all reads like an empty one, so it too ends at authentication rather than earlier.
  if (req.body === undefined) {
    req.body = {};
  }
  const body: unknown = req.body;
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    next(new AdminApiError("INVALID_BODY", "(body): must be a JSON object"));
    return;
  }
  // JSON.parse keeps `__proto__` as an own key, which validation would then silently drop: refuse it instead.
  if (Object.prototype.hasOwnProperty.call(body, "__proto__")) {
    next(new AdminApiError("INVALID_BODY", "(body): a field named __proto__ is refused"));
    return;
  }
  next();
};

/** The parsed body; only valid after jsonBody() ran. */
export function bodyOf(req: { body?: unknown }): Record<string, unknown> {
  return req.body as Record<string, unknown>;
}
