import type { ErrorRequestHandler, RequestHandler } from "express";
import { RouterError } from "../../../shared/errors";
import type { Logger } from "../../../shared/logging/create-logger";
import { AdminApiError, toErrorResponse } from "../errors";
import { BODY_LIMIT } from "./json-body";
import { requestIdOf } from "./request-context";

export const notFound: RequestHandler = (_req, _res, next) => {
  next(new AdminApiError("NOT_FOUND", "no such route"));
};

/** For a known path hit with another method: 405 with the Allow header (RFC 9110 §15.5.6). */
export function methodNotAllowed(allowed: readonly string[]): RequestHandler {
  const allow = allowed.join(", ");
  return (_req, res, next) => {
    res.setHeader("Allow", allow);
    next(new AdminApiError("METHOD_NOT_ALLOWED", `method not allowed on this path; allowed: ${allow}`));
  };
}

/**
 * The only place a status is chosen for an error (via HTTP_STATUS). Replaces Express's default handler,
 * which renders HTML with a stack trace. Messages of unknown errors stay in the log, never in the body.
 */
export function errorHandler(deps: { logger: Logger; redactText(text: string): string }): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const error = fromBodyParserError(err) ?? err;
    const requestId = requestIdOf(res);
    const { status, body } = toErrorResponse(error, requestId, deps.redactText);
    if (status >= 500) {
      // Named conditions (timeouts, Redis down) are expected operationally; only unknown errors are bugs.
      const level = error instanceof RouterError && status !== 500 ? "warn" : "error";
      deps.logger[level]("admin request failed", {
        at: "admin.error",
        requestId,
        path: req.path,
        status,
        code: error instanceof RouterError ? error.code : "UNKNOWN",
        error,
        cause: error instanceof Error ? error.cause : undefined,
      });
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(status).json(body);
  };
}

interface HttpErrorLike {
  readonly status: number;
  readonly type?: string;
}

function isHttpError(err: unknown): err is HttpErrorLike {
  return (
    !(err instanceof RouterError) && err instanceof Error && typeof (err as Partial<HttpErrorLike>).status === "number"
  );
}

/**
 * body-parser (and Express itself) throw http-errors whose messages may quote the body (JSON syntax
 * errors show the text around the fault); they are replaced by our codes with fixed messages.
 */
function fromBodyParserError(err: unknown): AdminApiError | undefined {
  if (!isHttpError(err)) {
    return undefined;
  }
  switch (err.type) {
    case "entity.too.large":
      return new AdminApiError("PAYLOAD_TOO_LARGE", `request body is larger than ${BODY_LIMIT}`);
    case "entity.parse.failed":
      return new AdminApiError("MALFORMED_JSON", "request body is not valid JSON");
    case "charset.unsupported":
    case "encoding.unsupported":
      return new AdminApiError("UNSUPPORTED_MEDIA_TYPE", "body must be uncompressed JSON in UTF-8");
    default:
      return err.status >= 400 && err.status < 500
        ? new AdminApiError("BAD_REQUEST", "the request could not be read")
        : undefined;
  }
}
