import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Reads a Redis Lua script from shared/redis/scripts/ and resolves its includes. A line
 * `--- @include "<name>"` is replaced by shared/redis/scripts/includes/<name>.lua (itself possibly including
 * others); each include goes in once per script, at its first mention. The scripts are plain files so that Lua
 * is read, linted and diffed as Lua, and a Redis error's `user_script:<n>` is mapped back to the file and line it
 * came from (`lines`), which an include shifts.
 * The build copies the .lua files next to the compiled loader (scripts/build.js), so `__dirname/scripts` is the
 * source folder under ts-jest and dist/shared/redis/scripts in production.
 */

export const SCRIPTS_DIR = join(__dirname, "scripts");
/** How a script's file is named in errors: its path in the repository. */
const SHOWN_DIR = "shared/redis/scripts";

const INCLUDE = /^\s*---\s*@include\s+"([A-Za-z0-9_-]+)"\s*$/;

/** Where one line of an expanded script comes from. */
export interface SourceLine {
  /** Relative to shared/redis/scripts: `bid-reserve.lua`, `includes/promises.lua`. */
  readonly file: string;
  readonly line: number;
}

export interface LoadedScript {
  /** The script's file, relative to shared/redis/scripts. */
  readonly file: string;
  /** The script as Redis runs it, includes expanded. */
  readonly lua: string;
  /** `lines[i]` is where line i + 1 of `lua` comes from. */
  readonly lines: readonly SourceLine[];
}

/** Reads `<dir>/<name>.lua` and expands its includes (from `<dir>/includes/`). Throws naming a missing file. */
export function loadScript(name: string, dir: string = SCRIPTS_DIR): LoadedScript {
  const file = `${name}.lua`;
  return expandIncludes(file, readLua(dir, file), dir);
}

/** Expands the includes of `text` (the contents of `file`); for scripts assembled in tests. */
export function expandIncludes(file: string, text: string, dir: string = SCRIPTS_DIR): LoadedScript {
  const out: string[] = [];
  const lines: SourceLine[] = [];
  const included = new Set<string>();
  const expand = (from: string, body: string, chain: readonly string[]): void => {
    body.split("\n").forEach((line, i) => {
      const include = INCLUDE.exec(line);
      if (include === null) {
        out.push(line);
        lines.push({ file: from, line: i + 1 });
        return;
      }
      const target = `includes/${include[1]}.lua`;
      if (chain.includes(target)) {
        throw new Error(`${SHOWN_DIR}/${from}:${i + 1}: include cycle ${[...chain, target].join(" → ")}`);
      }
      if (included.has(target)) return;
      included.add(target);
      expand(target, readLua(dir, target, `${from}:${i + 1}`), [...chain, target]);
    });
  };
  expand(file, text, [file]);
  return { file, lua: out.join("\n"), lines };
}

/** `<file>:<line>` in the repository for line `n` of the expanded script, or undefined when out of range. */
export function sourceOf(script: LoadedScript, n: number): string | undefined {
  const at = script.lines[n - 1];
  return at === undefined ? undefined : `${SHOWN_DIR}/${at.file}:${at.line}`;
}

function readLua(dir: string, file: string, includedFrom?: string): string {
  try {
    return readFileSync(join(dir, file), "utf8");
  } catch (err) {
    const from = includedFrom === undefined ? "" : ` (included from ${SHOWN_DIR}/${includedFrom})`;
    // A dist/ compiled by tsc alone has no .lua files: `npm run build` copies them.
    const hint = "; a build by tsc alone lacks the .lua files: run npm run build";
    throw new Error(`Redis script ${SHOWN_DIR}/${file} could not be read${from}: ${(err as Error).message}${hint}`, {
      cause: err,
    });
  }
}
