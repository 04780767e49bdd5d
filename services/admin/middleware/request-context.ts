import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { RequestHandler, Response } from "express";
import type { Logger } from "../../../shared/logging/create-logger";

/** Safe to echo in a header, to log and to embed in a BullMQ job id (no ':' and never all digits alone). */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The request id chosen by requestContext; every later middleware and the error handler read it here. */
export function requestIdOf(res: Response): string {
  const id: unknown = res.locals.requestId;
  return typeof id === "string" ? id : "unknown";
}

/**
 * First middleware: assigns the request id (the caller's X-Request-Id when well-formed, so a retried
 * request maps to the same job), sets headers every response gets, and writes exactly one access line
 * per request when the response finishes or the connection closes first. The body is never logged.
 */
export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const header = req.get("x-request-id");
    const requestId = header !== undefined && CLIENT_REQUEST_ID.test(header) ? header : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader("X-Request-Id", requestId);
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("X-Content-Type-Options", "nosniff");
    // No page of the admin (the dashboard's one-click actions above all) may be framed by another site.
    res.setHeader("X-Frame-Options", "DENY");
    res.setHeader("Content-Security-Policy", "frame-ancestors 'none'");

    const startedAt = performance.now();
    const method = req.method;
    const path = req.path;
    let logged = false;
    const logOnce = (): void => {
      if (logged) {
        return;
      }
      logged = true;
      if (res.locals.accessLogged === true) {
        return;
      }
      logger.info("admin request", {
        at: "admin.request",
        method,
        path,
        status: res.statusCode,
        durationMs: Math.round((performance.now() - startedAt) * 10) / 10,
        requestId,
        ...(res.writableFinished ? {} : { aborted: true }),
      });
    };
    res.once("finish", logOnce);
    res.once("close", logOnce);
    next();
  };
}
