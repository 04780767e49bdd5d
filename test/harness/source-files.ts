import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";

/** The repository's root, which the source checks' paths are relative to. */
export const REPO_ROOT = resolve(__dirname, "../..");

/** Every .ts file under `folder` (relative to the repository root), as repository-relative paths. */
export function tsFilesUnder(folder: string): string[] {
  return readdirSync(join(REPO_ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return tsFilesUnder(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}
