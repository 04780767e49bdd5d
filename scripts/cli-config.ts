import { existsSync } from "node:fs";
import { configFilePath, loadConfigFile } from "../shared/config";
import type { RouterConfig } from "../shared/config/types";
import { errorMessage } from "../shared/errors";
import { localPaths } from "./local/paths";
import { readState } from "./local/state";

export interface CliConfigFile {
  readonly path: string;
  /** Set when the file was found rather than named: a line for stderr saying which one. */
  readonly note?: string;
}

/**
 * The config file an operator's command (`queues`, `drain`, `status`) reads: ROUTER_CONFIG_FILE, else config.json
 * in the working directory, else, while `npm run local` runs (its state file lists a live process), the local
 * stack's `.local/config.json`. Without any of them, config.json: loading it then names the missing file.
 */
export function cliConfigFile(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): CliConfigFile {
  const named = configFilePath(env, cwd);
  if (env.ROUTER_CONFIG_FILE || existsSync(named)) {
    return { path: named };
  }
  const local = localPaths(cwd);
  let state;
  try {
    state = readState(local.stateFile);
  } catch {
    return { path: named };
  }
  const configFile = state?.configFile ?? local.configFile;
  if (state && existsSync(configFile) && state.processes.some((p) => isAlive(p.pid))) {
    return { path: configFile, note: `no config.json here: using the running local stack's ${configFile}` };
  }
  return { path: named };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, owned by someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The config of an operator's command, from `cliConfigFile`; a found file is named on stderr. Undefined (the
 * problem written to stderr, prefixed with the command's name) when it does not load: the command exits 1.
 */
export function loadCliConfig(command: string, env: NodeJS.ProcessEnv = process.env): RouterConfig | undefined {
  try {
    const file = cliConfigFile(env);
    if (file.note) process.stderr.write(`${command}: ${file.note}\n`);
    return loadConfigFile(file.path, env).config;
  } catch (err) {
    process.stderr.write(`${command}: the router config could not be loaded: ${errorMessage(err)}\n`);
    return undefined;
  }
}
