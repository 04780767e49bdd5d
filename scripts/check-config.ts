/**
 * `npm run check-config -- [file]`: validates a config file statically (connects to nothing) and prints
 * `config ok` with the effective values, secrets masked, or one line per problem. Exit code 0 / 1.
 */
import { ConfigError, configFilePath, loadConfig, readConfigFile, redactConfig } from "../shared/config";

function main(argv: readonly string[], env: NodeJS.ProcessEnv): number {
  const path = argv[0] ?? configFilePath(env);
  try {
    const { config, warnings } = loadConfig(readConfigFile(path), {
      ROUTER_ADMIN_TOKEN: env.ROUTER_ADMIN_TOKEN,
      ROUTER_MNEMONIC: env.ROUTER_MNEMONIC,
      REDIS_URL: env.REDIS_URL,
    });
    for (const warning of warnings) {
      process.stderr.write(`warning: ${warning}\n`);
    }
    process.stdout.write(`config ok\n${JSON.stringify(redactConfig(config), null, 2)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`config invalid: ${path}\n`);
      for (const problem of err.problems) {
        process.stderr.write(`  ${problem}\n`);
      }
      return 1;
    }
    throw err;
  }
}

process.exitCode = main(process.argv.slice(2), process.env);
