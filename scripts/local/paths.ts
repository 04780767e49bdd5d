import { join, resolve } from "node:path";

/**
 * Everything `npm run local` writes lives under `.local/` in the project (gitignored): the state file that
 * lets `local:stop` find what was started, the router config (never the operator's config.json), PM2's own
 * home, and every process's log. Compiled to dist/scripts/local, so the project root is three levels up.
 */
export interface LocalPaths {
  readonly root: string;
  readonly dir: string;
  readonly stateFile: string;
  readonly configFile: string;
  readonly logDir: string;
  readonly pm2Home: string;
  readonly pm2Bin: string;
  readonly ecosystemFile: string;
  readonly authMain: string;
}

export function localPaths(root: string = resolve(__dirname, "../../..")): LocalPaths {
  const dir = join(root, ".local");
  return {
    root,
    dir,
    stateFile: join(dir, "state.json"),
    configFile: join(dir, "config.json"),
    logDir: join(dir, "logs"),
    pm2Home: join(dir, "pm2"),
    pm2Bin: join(root, "node_modules", ".bin", "pm2"),
    ecosystemFile: join(root, "ecosystem.config.js"),
    authMain: join(root, "dist", "services", "messaging-auth", "main.js"),
  };
}
