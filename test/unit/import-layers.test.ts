import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import ts from "typescript";
import { REPO_ROOT as ROOT, tsFilesUnder } from "../harness/source-files";

/**
 * The layering rules of docs/architecture.md, checked on the source: a newcomer who adds an import that points
 * up a floor or closes a loop learns it here, with the offending edge named, not in a review.
 */

function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const base = join(dirname(from), specifier);
  for (const candidate of [`${base}.ts`, join(base, "index.ts")]) {
    const full = join(ROOT, candidate);
    if (existsSync(full) && statSync(full).isFile()) return relative(ROOT, full);
  }
  return undefined;
}

/** Every project file a file imports, type-only imports and re-exports included (they are edges too). */
function importGraph(folders: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of folders.flatMap(tsFilesUnder)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), "utf8"), true, true);
    const targets = importedFiles.map((imported) => resolveImport(file, imported.fileName));
    graph.set(file, [...new Set(targets.filter((t): t is string => t !== undefined))]);
  }
  return graph;
}

/** Strongly connected components with more than one member (Tarjan): each is an import cycle. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** The folder graph: an edge between two folders when a file of one imports a file of the other (not a parent's). */
function folderGraph(graph: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  const folders = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = dirname(file);
    const edges = folders.get(from) ?? new Set<string>();
    folders.set(from, edges);
    for (const target of targets) {
      const to = dirname(target);
      // A sub-folder reading its parent's context (send/ → the submitter's context.ts) is the normal nesting.
      if (to !== from && !from.startsWith(`${to}/`) && !to.startsWith(`${from}/`)) edges.add(to);
    }
  }
  return new Map([...folders].map(([folder, edges]) => [folder, [...edges]]));
}

function edgesWhere(
  graph: ReadonlyMap<string, readonly string[]>,
  bad: (from: string, to: string) => boolean,
): string[] {
  return [...graph].flatMap(([from, targets]) => targets.filter((to) => bad(from, to)).map((to) => `${from} → ${to}`));
}

const graph = importGraph(["services", "shared"]);

describe("import layers (docs/architecture.md)", () => {
  it("reads the tree it checks", () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get("services/submitter/main.ts")).toContain("shared/process/run-service.ts");
  });

  it("has no import cycle between files", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("has no cycle between folders", () => {
    expect(cycles(folderGraph(graph))).toEqual([]);
  });

  it("never imports a process from shared/, nor one process from another", () => {
    const service = (file: string): string | undefined => /^services\/([^/]+)\//.exec(file)?.[1];
    expect(edgesWhere(graph, (from, to) => service(to) !== undefined && service(from) !== service(to))).toEqual([]);
  });

  it("keeps shared/process at the top of shared/: no other shared layer imports it", () => {
    expect(
      edgesWhere(
        graph,
        (from, to) =>
          from.startsWith("shared/") && !from.startsWith("shared/process/") && to.startsWith("shared/process/"),
      ),
    ).toEqual([]);
  });

  it("keeps shared/redis (the script runner and its scripts) on the floor: it imports only shared/errors", () => {
    const runner = [...graph].filter(([file]) => file.startsWith("shared/redis/"));
    expect(runner.map(([file]) => file)).toContain("shared/redis/script-runner.ts");
    expect(
      edgesWhere(
        graph,
        (from, to) => from.startsWith("shared/redis/") && !to.startsWith("shared/redis/") && to !== "shared/errors.ts",
      ),
    ).toEqual([]);
  });

  it("keeps shared/queues (the queues themselves) under shared/coordination (keys, leases, decisions)", () => {
    expect(graph.has("shared/coordination/keys.ts")).toBe(true);
    expect(graph.has("shared/queues/jobs.ts")).toBe(true);
    expect(
      edgesWhere(graph, (from, to) => from.startsWith("shared/queues/") && to.startsWith("shared/coordination/")),
    ).toEqual([]);
    // Every router key is defined once, in a file that needs nothing else of the project.
    expect(graph.get("shared/coordination/keys.ts")).toEqual([]);
  });

  it("keeps shared/protocol pure: no I/O package, and of the project only itself, the error base, the signer's interface and config types", () => {
    // What a pure decision may lean on: encoding and validation libraries, never a client of Redis, NATS, a chain,
    // a database or the file system (docs/architecture.md: "pure NXTP logic, no I/O").
    const PURE_PACKAGES = new Set(["ethers", "joi"]);
    const ALLOWED_PROJECT = new Set(["shared/errors.ts", "shared/signer/router-signer.ts", "shared/config/types.ts"]);
    const protocolFiles = tsFilesUnder("shared/protocol");
    expect(protocolFiles.length).toBeGreaterThan(20);
    const offending = protocolFiles.flatMap((file) => {
      const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), "utf8"), true, true);
      return importedFiles
        .map((imported) => imported.fileName)
        .filter((specifier) => {
          if (!specifier.startsWith(".")) return !PURE_PACKAGES.has(specifier);
          const target = resolveImport(file, specifier);
          return target === undefined || !(target.startsWith("shared/protocol/") || ALLOWED_PROJECT.has(target));
        })
        .map((specifier) => `${file} → ${specifier}`);
    });
    expect(offending).toEqual([]);
  });

  it("keeps the leaves (timing, errors) free of project imports", () => {
    expect(graph.get("shared/timing.ts")).toEqual([]);
    expect(graph.get("shared/errors.ts")).toEqual([]);
  });

  it("finds a cycle when there is one (the checker itself can fail)", () => {
    const looped = new Map([
      ["a/x.ts", ["b/y.ts"]],
      ["b/y.ts", ["a/x.ts"]],
      ["c/z.ts", ["a/x.ts"]],
    ]);
    expect(cycles(looped)).toEqual([["a/x.ts", "b/y.ts"]]);
    expect(cycles(folderGraph(looped))).toEqual([["a", "b"]]);
  });
});
