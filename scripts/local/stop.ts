import { localPaths } from "./paths";
import { pm2DaemonPid } from "./pm2";
import { readState } from "./state";
import { stopLocalStack } from "./stop-stack";

/**
 * `npm run local:stop`: stops exactly what `npm run local` recorded in .local/state.json (by pid, checked
 * against the program and start time recorded), and the PM2 daemon of .local/pm2. Nothing else.
 */
async function main(): Promise<number> {
  const paths = localPaths();
  const state = readState(paths.stateFile);
  if (!state && pm2DaemonPid(paths) === undefined) {
    process.stdout.write(
      "npm run local:stop: no local stack is recorded (.local/state.json absent); nothing to stop\n",
    );
    return 0;
  }
  const startedAtMs = Date.now();
  process.stdout.write("Stopping the local stack…\n");
  const report = await stopLocalStack(paths, state, (line) => process.stdout.write(`${line}\n`));
  if (report.alreadyGone.length > 0) {
    process.stdout.write(`  already gone: ${report.alreadyGone.join(", ")}\n`);
  }
  process.stdout.write(
    `Stopped ${report.stopped.length} process(es) in ${((Date.now() - startedAtMs) / 1000).toFixed(1)} s; logs stay in .local/logs\n`,
  );
  return 0;
}

void main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`npm run local:stop failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
