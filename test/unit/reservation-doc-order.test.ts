import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * docs/auction.md lists the reservation script's checks (Processing order, step 8) in the order the script runs
 * them, so a reader who asks "why was this bid refused with X and not Y" gets the script's answer. This holds the
 * refusal codes' order of first appearance in the doc's step 8 to the script's.
 */
const ROOT = resolve(__dirname, "../..");
const SCRIPT = "shared/redis/scripts/bid-reserve.lua";

function firstAppearances(codes: Iterable<string>): string[] {
  return [...new Set(codes)];
}

describe("docs/auction.md and the reservation script", () => {
  it("list the reservation's refusals in one order", () => {
    const script = readFileSync(join(ROOT, SCRIPT), "utf8");
    const body = script.slice(script.indexOf("]]"));
    const scriptOrder = firstAppearances(
      [...body.matchAll(/(?:'code', |liquidity\()'([A-Za-z]+)'/g)].map((m) => m[1]!),
    );
    const doc = readFileSync(join(ROOT, "docs/auction.md"), "utf8");
    const step = /\n8\. \*\*One Lua script in Redis\*\*([\s\S]*?)\n9\. /.exec(doc)?.[1] ?? "";
    expect(step).toContain(SCRIPT);
    const docOrder = firstAppearances([...step.matchAll(/(?:→|else)\s+`([A-Za-z]+)`/g)].map((m) => m[1]!));
    expect(scriptOrder.filter((code) => code !== "ok")).toEqual(docOrder);
    expect(docOrder).toContain("ClaimLost");
  });
});
