import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError } from "./config-error";
import { loadConfig } from "./load-config";
import { originalEnvOf, resolveOriginalEnv } from "./original-router";
import type { ConfigEnv, LoadedConfig } from "./types";

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
  return loadConfigFile(configFilePath(env, cwd), env);
}

/**
 * Reads and loads the file at `path` with the environment's overrides. A file that cannot be read or parsed is
 * reported together with the environment's own problems (the original router's variables), all in one run.
 */
export function loadConfigFile(path: string, env: NodeJS.ProcessEnv): LoadedConfig {
  const configEnv = configEnvOf(env);
  let raw: unknown;
  try {
    raw = readConfigFile(path);
  } catch (err) {
    if (!(err instanceof ConfigError)) {
      throw err;
    }
    const problems: string[] = [];
    const warnings: string[] = [];
    resolveOriginalEnv(configEnv, problems, warnings);
    throw new ConfigError([...problems, ...err.problems], warnings);
  }
  return loadConfig(raw, configEnv);
}

/** The variables the config reads: ours, and the original router's `NXTP_*` ones (each renamed or refused). */
export function configEnvOf(env: NodeJS.ProcessEnv): ConfigEnv {
  return {
    ROUTER_ADMIN_TOKEN: env.ROUTER_ADMIN_TOKEN,
    ROUTER_MNEMONIC: env.ROUTER_MNEMONIC,
    REDIS_URL: env.REDIS_URL,
    ROUTER_CONTAINER_HOST: env.ROUTER_CONTAINER_HOST,
    original: originalEnvOf(env),
  };
}
