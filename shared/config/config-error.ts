import { RouterError, errorClass } from "../errors";

/**
 * Every problem of a config, one line each, naming the key path (`chainConfig.1337.providers[0]: ...`), with the
 * warnings found on the way: a problem may concern a key the file spells the original router's way.
 */
export class ConfigError extends errorClass(RouterError, "CONFIG_INVALID", "terminal") {
  readonly problems: readonly string[];
  readonly warnings: readonly string[];

  constructor(problems: readonly string[], warnings: readonly string[] = []) {
    super(`invalid router config:\n${problems.map((p) => `  ${p}`).join("\n")}`, { problems });
    this.problems = problems;
    this.warnings = warnings;
  }
}
