import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/**
 * The project carries its own references: docs and comments cite docs/protocol.md, docs/config.md and
 * docs/admin-api.md, never a file outside the repository. This checks, on every document and source file:
 * - no citation of the external references the code was first written against;
 * - every `protocol.md#anchor` (in a comment, a test name or a link) names an anchor docs/protocol.md has;
 * - every relative Markdown link in README.md and docs/ points at a file that exists, and at a heading or
 *   `<a id>` that exists when it names an anchor in a Markdown file.
 */
const ROOT = resolve(__dirname, "../..");
const SKIPPED_DIRS = new Set(["node_modules", "dist", ".git", "coverage", ".local"]);
const SCANNED = /\.(ts|js|mjs|md|yml|json)$/;
const SELF = relative(ROOT, __filename);

/** Names of the external documents, split so that this file does not match itself. */
const EXTERNAL_REFERENCES = [
  ["PROTOCOL", ".md"],
  ["PROTOCOL", " §"],
  ["router", "-spec"],
  ["REAL", "_PARTS"],
  ["ECOSYSTEM", ".md"],
  ["STYLE", ".md"],
  ["weak", " point "],
].map((parts) => parts.join(""));

function filesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    if (SKIPPED_DIRS.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      found.push(...filesUnder(path));
    } else if (SCANNED.test(name) && name !== "package-lock.json") {
      found.push(path);
    }
  }
  return found;
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes. */
function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsOf(markdownFile: string): Set<string> {
  const text = readFileSync(markdownFile, "utf8");
  const anchors = new Set<string>();
  for (const match of text.matchAll(/<a id="([^"]+)"><\/a>/g)) anchors.add(match[1]!);
  for (const match of text.matchAll(/^#{1,6} (.+)$/gm)) anchors.add(headingSlug(match[1]!));
  return anchors;
}

const files = filesUnder(ROOT).map((path) => relative(ROOT, path));
const protocolAnchors = anchorsOf(join(ROOT, "docs/protocol.md"));

describe("docs links and citations (docs/protocol.md)", () => {
  it("scans the documents and the sources", () => {
    expect(files).toEqual(expect.arrayContaining(["README.md", "docs/protocol.md", "shared/protocol/bid.ts"]));
    expect(protocolAnchors.has("bid-encoding")).toBe(true);
  });

  it("cites no document outside the repository", () => {
    const offenders: string[] = [];
    for (const file of files) {
      if (file === SELF) continue;
      readFileSync(join(ROOT, file), "utf8")
        .split("\n")
        .forEach((line, index) => {
          const external = EXTERNAL_REFERENCES.some((name) => line.includes(name));
          // A bare section sign is a citation of some outside document, unless it is an RFC's.
          const section = line.includes("§") && !/RFC \d/.test(line);
          if (external || section) offenders.push(`${file}:${index + 1}: ${line.trim()}`);
        });
    }
    expect(offenders).toEqual([]);
  });

  it("gives every folder under test/ a line of README.md's layout", () => {
    const layout = /## Layout\n\n```\n([\s\S]*?)```/.exec(readFileSync(join(ROOT, "README.md"), "utf8"))?.[1] ?? "";
    const described = new Set([...layout.matchAll(/^(test\/[\w-]+)\s/gm)].map((match) => match[1]!));
    const folders = readdirSync(join(ROOT, "test"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `test/${entry.name}`);
    expect(folders.length).toBeGreaterThan(5);
    expect(folders.filter((folder) => !described.has(folder))).toEqual([]);
  });

  it("names in architecture.md's 'Where each rule lives' only functions the linked files define", () => {
    const text = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
    const section = /## Where each rule lives\n([\s\S]*?)\n## /.exec(text)?.[1] ?? "";
    const rows = section.split("\n").filter((line) => line.startsWith("| **"));
    const missing: string[] = [];
    let named = 0;
    for (const row of rows) {
      const decidedIn = row.split(" | ")[1] ?? "";
      // Each link to a source file, then the `names` written after it (up to the next link).
      for (const match of decidedIn.matchAll(/\]\(([^)]+\.(?:ts|lua))\)([^[]*)/g)) {
        const source = readFileSync(resolve(ROOT, "docs", match[1]!), "utf8");
        for (const name of match[2]!.matchAll(/`([A-Za-z_]\w*)`/g)) {
          named += 1;
          if (!new RegExp(`\\b${name[1]!}\\b`).test(source)) missing.push(`${match[1]!}: ${name[1]!}`);
        }
      }
    }
    expect(rows.length).toBeGreaterThan(20);
    expect(named).toBeGreaterThan(30);
    expect(missing).toEqual([]);
  });

  it("names only anchors docs/protocol.md has", () => {
    const missing: string[] = [];
    let cited = 0;
    for (const file of files) {
      if (file === SELF) continue;
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const match of text.matchAll(/protocol\.md#([A-Za-z0-9_-]+)/g)) {
        cited += 1;
        if (!protocolAnchors.has(match[1]!)) missing.push(`${file}: #${match[1]!}`);
      }
    }
    expect(missing).toEqual([]);
    expect(cited).toBeGreaterThan(100);
  });

  it("resolves every relative link of README.md and docs/", () => {
    const broken: string[] = [];
    const markdown = files.filter((file) => file === "README.md" || /^docs\/.*\.md$/.test(file));
    for (const file of markdown) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [path, anchor] = target.split("#") as [string, string | undefined];
        const targetFile = path === "" ? join(ROOT, file) : resolve(ROOT, dirname(file), path);
        if (!existsSync(targetFile)) {
          broken.push(`${file}: ${target} (no such file)`);
        } else if (anchor !== undefined && targetFile.endsWith(".md") && !anchorsOf(targetFile).has(anchor)) {
          broken.push(`${file}: ${target} (no such anchor)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
