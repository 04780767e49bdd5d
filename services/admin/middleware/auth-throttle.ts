import type { Request, Response } from "express";
import type { Logger } from "../../../shared/logging/create-logger";
import { routerMetrics } from "../../../shared/metrics/router-metrics";
import { sourceAddressKey } from "../../../shared/source-address";
import { AdminApiError } from "../errors";
import { requestIdOf } from "./request-context";

/**
 * Slows down guessing the admin token, on both surfaces (the POST body's `adminToken`, the pages' Basic or
 * Bearer credentials), without letting anyone lock the admin out:
 * - keyed on the TCP source address (an IPv6 /64), which a stranger cannot set for someone else; nothing in the
 *   request (a header, a body field) chooses the key;
 * - a correct token is checked and passes at once, whatever failed before; only wrong tokens are slowed;
 * - a source's first FREE_FAILURES wrong tokens (typos) answer at once; each later one is answered after a delay
 *   doubling from BASE_DELAY_MS up to MAX_DELAY_MS, and a source holds at most MAX_HELD_PER_SOURCE such answers
 *   (MAX_HELD in all): past that its requests answer 429 unchecked, so guesses from one source run at most
 *   MAX_HELD_PER_SOURCE / MAX_DELAY_MS (0.8 per second), however many connections it opens.
 * Only a requester sharing the admin's source address (same host, same NAT) can make it wait; the admin API
 * belongs on loopback (docs/admin-api.md). Forgotten after FORGET_AFTER_MS without a failure, or on success.
 */
const FREE_FAILURES = 5;
const BASE_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;
const MAX_HELD_PER_SOURCE = 4;
const MAX_HELD = 256;
const MAX_SOURCES = 10_000;
const FORGET_AFTER_MS = 15 * 60_000;
/** One log line per source per interval; the lines left out are counted in the next one and in the metric. */
const LOG_INTERVAL_MS = 10_000;

export type AuthSurface = "api" | "page";

interface SourceState {
  failures: number;
  lastFailureMs: number;
  held: number;
  lastLogMs: number;
  unlogged: number;
}

export interface AuthThrottle {
  /**
   * Checks one credential: `next()` for a correct one at once; otherwise `refuse()` now or after the source's
   * delay, or `refuse(429 error)` without checking when the source already holds its share of refusals.
   */
  check(
    req: Request,
    res: Response,
    params: { surface: AuthSurface; provided: string | undefined; matches(token: string): boolean },
    outcome: { next(): void; refuse(error?: AdminApiError): void },
  ): void;
}

export function createAuthThrottle(logger: Logger, now: () => number = Date.now): AuthThrottle {
  const sources = new Map<string, SourceState>();
  let heldTotal = 0;

  const stateOf = (key: string): SourceState => {
    let state = sources.get(key);
    if (state && now() - state.lastFailureMs > FORGET_AFTER_MS && state.held === 0) {
      sources.delete(key);
      state = undefined;
    }
    if (!state) {
      state = { failures: 0, lastFailureMs: now(), held: 0, lastLogMs: 0, unlogged: 0 };
      sources.set(key, state);
      for (const [oldKey, old] of sources) {
        if (sources.size <= MAX_SOURCES) {
          break;
        }
        if (old.held === 0) {
          sources.delete(oldKey);
        }
      }
    }
    return state;
  };

  const logRefusal = (req: Request, res: Response, key: string, state: SourceState, fields: object): void => {
    // This line replaces the request's access line (request-context.ts), so a guess costs one line at most.
    res.locals.accessLogged = true;
    if (now() - state.lastLogMs < LOG_INTERVAL_MS) {
      state.unlogged += 1;
      return;
    }
    logger.warn("admin authentication refused", {
      at: "admin.auth",
      path: req.path,
      requestId: requestIdOf(res),
      source: key,
      failures: state.failures,
      ...(state.unlogged > 0 ? { notLogged: state.unlogged } : {}),
      ...fields,
    });
    state.lastLogMs = now();
    state.unlogged = 0;
  };

  return {
    check(req, res, params, outcome) {
      const { surface, provided } = params;
      if (provided === undefined) {
        // No credential is no guess: a browser's first request, or a script missing its token.
        routerMetrics().adminAuthFailures.inc({ surface, reason: "no_token" });
        outcome.refuse();
        return;
      }
      const key = sourceAddressKey(req.socket.remoteAddress);
      const known = sources.get(key);
      if (known && known.failures >= FREE_FAILURES && (known.held >= MAX_HELD_PER_SOURCE || heldTotal >= MAX_HELD)) {
        routerMetrics().adminAuthFailures.inc({ surface, reason: "throttled" });
        logRefusal(req, res, key, known, { reason: "throttled" });
        res.setHeader("Retry-After", String(Math.ceil(MAX_DELAY_MS / 1000)));
        outcome.refuse(
          new AdminApiError("TOO_MANY_AUTH_FAILURES", "too many failed authentications from this address; retry later"),
        );
        return;
      }
      if (params.matches(provided)) {
        sources.delete(key);
        outcome.next();
        return;
      }
      const state = stateOf(key);
      state.failures += 1;
      state.lastFailureMs = now();
      routerMetrics().adminAuthFailures.inc({ surface, reason: "wrong_token" });
      logRefusal(req, res, key, state, { reason: "wrong token" });
      const over = state.failures - FREE_FAILURES;
      if (over <= 0) {
        outcome.refuse();
        return;
      }
      state.held += 1;
      heldTotal += 1;
      setTimeout(
        () => {
          state.held -= 1;
          heldTotal -= 1;
          outcome.refuse();
        },
        Math.min(BASE_DELAY_MS * 2 ** (over - 1), MAX_DELAY_MS),
      ).unref();
    },
  };
}
