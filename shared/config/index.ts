export { ConfigError, loadConfig, formatPath, ledgerWithDefaults, type ConfigEnv } from "./load-config";
export { readConfig, readConfigFile, loadConfigFile, configEnvOf, configFilePath } from "./read-config";
export { configSecrets, redactConfig } from "./redact-config";
export { knownDeployments, type KnownDeployment } from "./deployments";
export { poolAssetsOf, poolPartnersOf } from "./pools";
export * from "./defaults";
export type * from "./types";
