import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * docs/architecture.md's "Where each rule lives" answers a new engineer's questions in one guess: each question's
 * key word finds exactly one row, and that row's first link and the first name after it are a file that exists and
 * defines that function. (docs-links.test.ts checks every name of the table is at least mentioned in its file.)
 */

const ROOT = resolve(__dirname, "../..");

const QUESTIONS: readonly { readonly question: string; readonly keyword: RegExp }[] = [
  { question: "where is the router fee computed", keyword: /router fee/i },
  { question: "what does a receiving prepare's revert lead to (outcome policy)", keyword: /\*\*Outcomes:\*\*/ },
  { question: "where is the stale-balance refusal of a bid", keyword: /stale balance/i },
  { question: "where is the admin token compared", keyword: /admin token/i },
  { question: "where is the nonce gap filled", keyword: /nonce gap/i },
];

interface Row {
  readonly rule: string;
  readonly decidedIn: string;
}

function tableRows(): Row[] {
  const text = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
  const section = /## Where each rule lives\n([\s\S]*?)\n## /.exec(text)?.[1] ?? "";
  return section
    .split("\n")
    .filter((line) => line.startsWith("| **"))
    .map((line) => {
      const [rule = "", decidedIn = ""] = line.slice(2).split(" | ");
      return { rule, decidedIn };
    });
}

/** A declaration of `name`: a function, class, const or let in TypeScript, a local function in Lua. */
function declares(source: string, name: string): boolean {
  return new RegExp(`(?:function|class|const|let)\\s+${name}\\b`).test(source);
}

describe("docs/architecture.md 'Where each rule lives': five questions, one guess each", () => {
  const rows = tableRows();

  it.each(QUESTIONS)("$question: one row, whose first file defines its first name", ({ keyword }) => {
    const found = rows.filter((row) => keyword.test(row.rule));
    expect(found.map((row) => row.rule)).toHaveLength(1);
    const first = /\]\(([^)]+\.(?:ts|lua))\)\s*`([A-Za-z_]\w*)`/.exec(found[0]!.decidedIn);
    expect(first).not.toBeNull();
    const [, link, name] = first!;
    const file = resolve(ROOT, "docs", link!);
    expect(existsSync(file)).toBe(true);
    expect({ file: link, defines: declares(readFileSync(file, "utf8"), name!) }).toEqual({ file: link, defines: true });
  });
});
