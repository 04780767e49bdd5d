import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

/**
 * A rule is stated where a reader looks for it, not as a pointer into the project's issue tracker: a reader of
 * a doc, a comment or a test title has no tracker, so "(issue 22)" or "defect 4 of issue 9" tells them nothing.
 * Say what the issue meant instead (the behaviour, the guarantee, the attack's name). This fails on any such
 * citation in the project's own docs, sources, tests, benchmarks, scripts and ops files, naming file:line.
 */
const ROOT = resolve(__dirname, "../..");
const SCANNED_ROOTS = [
  "docs",
  "services",
  "shared",
  "bench",
  "test",
  "scripts",
  "ops",
  "ecosystem.config.js",
  "README.md",
];
const SKIPPED_DIRS = new Set(["node_modules", "dist", "coverage", ".local"]);
const SCANNED = /\.(ts|js|mjs|cjs|md|lua|yml|yaml|json|sh)$/;
/** This file names the forms it looks for. */
const SELF = relative(ROOT, __filename);

/** The forms a citation takes: an issue's number (with or without "#"), a defect's, a lettered part. */
const CITATIONS: readonly RegExp[] = [/\bissues? #?\d/i, /\bdefects? #?\d/i, /\bpart [A-Z]\b(?![a-z])/];

function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return SCANNED.test(path) ? [path] : [];
  const found: string[] = [];
  for (const name of readdirSync(path)) {
    if (SKIPPED_DIRS.has(name)) continue;
    found.push(...filesUnder(join(path, name)));
  }
  return found;
}

/** Every line of `text` that cites the tracker, as `file:line: text`. */
function trackerCitations(file: string, text: string): string[] {
  const offenders: string[] = [];
  text.split("\n").forEach((line, index) => {
    if (CITATIONS.some((pattern) => pattern.test(line))) offenders.push(`${file}:${index + 1}: ${line.trim()}`);
  });
  return offenders;
}

describe("no citations of the issue tracker", () => {
  const files = SCANNED_ROOTS.flatMap((root) => filesUnder(join(ROOT, root)))
    .map((path) => relative(ROOT, path))
    .filter((file) => file !== SELF);

  it("scans the docs, sources and tests", () => {
    expect(files).toEqual(
      expect.arrayContaining([
        "README.md",
        "docs/decisions.md",
        "ecosystem.config.js",
        "test/adversarial/withdrawal-twice.test.ts",
      ]),
    );
  });

  it("recognises the forms a citation takes", () => {
    const cited = [
      "## Withdrawals paid at most once (issue 22)",
      " * Issues 12 and 16 items 3 and 7: auction instances",
      " * Defect 5 of issue 9: a remove-liquidity",
      "readiness (issues 9 and 12, part K)",
      "// issue #14",
      "/** Issue 9 defect 4: the claim's retry policy */",
    ];
    expect(cited.flatMap((line) => trackerCitations("x.md", line))).toHaveLength(cited.length);
    expect(trackerCitations("x.md", "a part of the pool; the issue order of nonces; department A")).toEqual([]);
  });

  it("finds none in the project's files", () => {
    const offenders = files.flatMap((file) => trackerCitations(file, readFileSync(join(ROOT, file), "utf8")));
    expect(offenders).toEqual([]);
  });
});
