/**
 * `npm run check-config -- [file]`: validates a config file statically (connects to nothing) and prints
 * `config ok` with the effective values, secrets masked, or every problem of the file (and of the original
 * router's `NXTP_*` variables in the environment), one line each. Warnings go to stderr either way.
 * Exit code 0 / 1.
 */
import { ConfigError, configFilePath, loadConfigFile, redactConfig } from "../shared/config";

function main(argv: readonly string[], env: NodeJS.ProcessEnv): number {
  const path = argv[0] ?? configFilePath(env);
  try {
    const { config, warnings } = loadConfigFile(path, env);
    printWarnings(warnings);
    process.stdout.write(`config ok\n${JSON.stringify(redactConfig(config), null, 2)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      printWarnings(err.warnings);
      process.stderr.write(`config invalid: ${path} (${err.problems.length} problem(s))\n`);
      for (const problem of err.problems) {
        process.stderr.write(`  ${problem}\n`);
      }
      return 1;
    }
    throw err;
  }
}

function printWarnings(warnings: readonly string[]): void {
  for (const warning of warnings) {
    process.stderr.write(`warning: ${warning}\n`);
  }
}

process.exitCode = main(process.argv.slice(2), process.env);
