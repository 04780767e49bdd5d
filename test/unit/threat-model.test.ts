/**
 * docs/threat-model.md names, for each guarantee, the test that proves it. A renamed or deleted test would leave
 * a guarantee that nothing proves any more: every cited file must exist and every cited title must be in it.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(__dirname, "..", "..");
const DOC = readFileSync(join(ROOT, "docs", "threat-model.md"), "utf8");

interface Citation {
  file: string;
  titles: string[];
}

/** The last cell of each table row: `path` › title; › another title (a title may end in … or hold %s). */
function citations(): Citation[] {
  const found: Citation[] = [];
  for (const line of DOC.split("\n")) {
    if (!line.startsWith("|")) continue;
    const cells = line.split("|").map((c) => c.trim());
    const last = cells[cells.length - 2] ?? "";
    for (const part of last.split(/[,;]\s*(?=`test\/)/)) {
      const file = /`(test\/[^`]+)`/.exec(part)?.[1];
      if (file === undefined) continue;
      const titles = part
        .split("›")
        .slice(1)
        .map((t) => t.replace(/;\s*$/, "").trim())
        .filter((t) => t.length > 0);
      found.push({ file, titles });
    }
  }
  return found;
}

/** The parts of a title that must appear verbatim: the text between elisions (… or a jest %s). */
function verbatimParts(title: string): string[] {
  return title
    .split(/…|%s/)
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
}

describe("docs/threat-model.md", () => {
  const cited = citations();

  it("cites tests for its guarantees", () => {
    expect(cited.length).toBeGreaterThan(30);
    expect(cited.filter((c) => c.file.startsWith("test/adversarial/")).length).toBeGreaterThan(15);
  });

  it("names only test files that exist", () => {
    const missing = cited.map((c) => c.file).filter((f) => !existsSync(join(ROOT, f)));
    expect(missing).toEqual([]);
  });

  it("names only test titles that are in the cited file", () => {
    const missing: string[] = [];
    for (const { file, titles } of cited) {
      if (!existsSync(join(ROOT, file))) continue;
      const source = readFileSync(join(ROOT, file), "utf8");
      for (const title of titles) {
        if (verbatimParts(title).some((part) => !source.includes(part))) missing.push(`${file} › ${title}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("cites every test file of test/adversarial", () => {
    const files = readdirSync(join(ROOT, "test", "adversarial")).filter((f) => f.endsWith(".test.ts"));
    const uncited = files.filter((f) => !cited.some((c) => c.file === `test/adversarial/${f}`));
    expect(uncited).toEqual([]);
  });
});
