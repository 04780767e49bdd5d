import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { REPO_ROOT as ROOT, tsFilesUnder } from "../harness/source-files";

/**
 * The guide's size limits, checked on the source: no source file in services/ or shared/ over 400 lines, no
 * function over 120. A newcomer whose function grows past the limit learns it here, with file:line and length.
 */

const FOLDERS = ["services", "shared"] as const;
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 120;

type FunctionNode =
  | ts.FunctionDeclaration
  | ts.MethodDeclaration
  | ts.ArrowFunction
  | ts.FunctionExpression
  | ts.ConstructorDeclaration
  | ts.AccessorDeclaration;

/** Functions with a body (an overload or interface signature has none, and nothing to split). */
function isFunctionWithBody(node: ts.Node): node is FunctionNode {
  return (
    (ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node)) &&
    node.body !== undefined
  );
}

function nameOf(node: FunctionNode, file: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  if (node.name !== undefined) return node.name.getText(file);
  // An anonymous function named by what holds it: `const x = () => …`, `x: () => …`.
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name !== undefined) {
    return parent.name.getText(file);
  }
  return "(anonymous)";
}

interface Finding {
  readonly where: string;
  readonly lines: number;
  readonly what: string;
}

/** Lines of a file as `wc -l` counts them. */
function lineCount(text: string): number {
  const lines = text.split("\n").length;
  return text.endsWith("\n") ? lines - 1 : lines;
}

function findOversized(path: string): Finding[] {
  const text = readFileSync(join(ROOT, path), "utf8");
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Finding[] = [];
  const fileLines = lineCount(text);
  if (fileLines > MAX_FILE_LINES) {
    found.push({ where: `${path}:1`, lines: fileLines, what: `file (limit ${MAX_FILE_LINES})` });
  }
  const visit = (node: ts.Node): void => {
    if (isFunctionWithBody(node)) {
      // From the function's first line (its doc comment excluded) to its last.
      const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
      const last = file.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
      const lines = last - first + 1;
      if (lines > MAX_FUNCTION_LINES) {
        found.push({
          where: `${path}:${first}`,
          lines,
          what: `function ${nameOf(node, file)} (limit ${MAX_FUNCTION_LINES})`,
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe("code size (docs: the guide's limits on files and functions)", () => {
  const files = FOLDERS.flatMap(tsFilesUnder);

  it("walks the source folders", () => {
    expect(files.length).toBeGreaterThan(50);
  });

  it("has no source file over 400 lines and no function over 120 lines", () => {
    const found = files.flatMap(findOversized).map((f) => `${f.where}: ${f.lines} lines, ${f.what}`);
    expect(found).toEqual([]);
  });
});
