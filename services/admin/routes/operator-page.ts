import { createHash } from "node:crypto";
import type express from "express";
import type { RequestHandler } from "express";
import { methodNotAllowed } from "../middleware/error-handler";
import { OPERATOR_CSS, OPERATOR_HTML, OPERATOR_JS } from "./operator-page-assets";

export const OPERATOR_PATH = "/operator";

const hashOf = (text: string): string => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

/**
 * Nothing but this page's own inline style and script (by hash) and requests to its own origin: no framework,
 * no CDN, no font, no frame, no form, no plugin. `default-src 'self'` covers fetch (connect-src) and images.
 */
export const OPERATOR_CSP = [
  "default-src 'self'",
  `script-src ${hashOf(OPERATOR_JS)}`,
  `style-src ${hashOf(OPERATOR_CSS)}`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join("; ");

const PAGE = OPERATOR_HTML(OPERATOR_CSS, OPERATOR_JS);

/**
 * `GET /operator` (docs/operating.md#operator-page): liquidity against targets, profit and loss over time, the
 * latest swaps with their net and the active alerts, on one page. Behind the admin token as HTTP Basic, like
 * the queue dashboard: the browser prompts once and resends the credentials to the API calls of the same
 * origin (the page is at the root, so every path of the origin is in the credentials' space); the token is
 * never in a URL or in the page.
 */
export function operatorPage(app: express.Express, deps: { readonly adminPage: RequestHandler }): void {
  app.get(OPERATOR_PATH, deps.adminPage, (_req, res) => {
    res.setHeader("Content-Security-Policy", OPERATOR_CSP);
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("Referrer-Policy", "no-referrer");
    res.setHeader("Cache-Control", "no-store");
    res.type("html").send(PAGE);
  });
  app.all(OPERATOR_PATH, methodNotAllowed(["GET", "HEAD"]));
}
