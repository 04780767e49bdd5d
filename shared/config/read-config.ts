import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError, loadConfig, type ConfigEnv } from "./load-config";
import type { LoadedConfig } from "./types";

/** `ROUTER_CONFIG_FILE`, else `config.json` in the working directory. */
export function configFilePath(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): string {
  return resolve(cwd, env.ROUTER_CONFIG_FILE || "config.json");
}

/** Reads and parses the file; a missing or malformed file is a ConfigError like any other problem. */
export function readConfigFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : "file cannot be read";
    throw new ConfigError([`(file) ${path}: ${reason} (set ROUTER_CONFIG_FILE or create config.json)`]);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    // JSON.parse messages quote a few characters around the error position; keep only the position.
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new ConfigError([`(file) ${path}: not valid JSON${position ? ` (at character ${position})` : ""}`]);
  }
}

export function readConfig(env: NodeJS.ProcessEnv, cwd?: string): LoadedConfig {
  const path = configFilePath(env, cwd);
  return loadConfig(readConfigFile(path), pickConfigEnv(env));
}

function pickConfigEnv(env: NodeJS.ProcessEnv): ConfigEnv {
  return { ROUTER_ADMIN_TOKEN: env.ROUTER_ADMIN_TOKEN, ROUTER_MNEMONIC: env.ROUTER_MNEMONIC, REDIS_URL: env.REDIS_URL };
}
