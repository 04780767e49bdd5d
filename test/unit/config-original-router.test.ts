import { ConfigError, configEnvOf, loadConfig, type ConfigEnv } from "../../shared/config";
import { MESSAGING_DEFAULTS } from "../../shared/config/defaults";
import { MNEMONIC, TM, TOKEN, validConfig } from "./config-fixtures";

/** The original NXTP v0 router's keys and NXTP_* variables: each is read under our name or refused naming it. */

const USDC_MAINNET = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
const PRIVATE_NATS = "nats://10.0.0.4:4222";
const SIGNER = "http://10.0.0.7:9000";
const ourConfig = validConfig;

function chain(raw: Record<string, unknown>, id: string): Record<string, unknown> {
  return (raw.chainConfig as Record<string, Record<string, unknown>>)[id];
}

function outcome(raw: unknown, env: ConfigEnv = {}): { problems: string[]; warnings: string[] } {
  try {
    return { problems: [], warnings: [...loadConfig(raw, env).warnings] };
  } catch (err) {
    if (err instanceof ConfigError) {
      return { problems: [...err.problems], warnings: [...err.warnings] };
    }
    throw err;
  }
}

describe("a config written for the original router", () => {
  it("loads, with one warning per renamed or ignored key, and means what it meant there", () => {
    const raw: Record<string, unknown> = {
      ...ourConfig(),
      mnemonic: undefined,
      web3SignerUrl: SIGNER,
      natsUrl: PRIVATE_NATS,
      authUrl: "http://10.0.0.4:5040",
      metrics_host: "10.0.0.2",
      allowRelay: false,
      allowedTolerance: 10,
      priceCacheMode: true,
      overbidAllowance: 150,
      overridechainRecommendedConfirmations: false,
    };
    delete raw.mnemonic;
    Object.assign(chain(raw, "1337"), {
      allowFulfillRelay: true,
      confirmationTimeout: 45_000,
      gasPriceReplacementBumpPercent: 30,
      gelatoOracle: true,
      syncProvidersInterval: 300_000,
      debug_logRpcCalls: false,
    });
    (raw.swapPools as Array<Record<string, unknown>>)[0].mainnetEquivalent = USDC_MAINNET;

    const { config, warnings } = loadConfig(raw, {});
    expect(config.remoteSignerUrl).toBe(SIGNER);
    expect(config.messagingUrl).toBe(PRIVATE_NATS);
    expect(config.metricsHost).toBe("10.0.0.2");
    expect(config.chainConfig["1337"]).toMatchObject({
      allowRelay: true,
      confirmationTimeoutMs: 45_000,
      gasBumpPercent: 30,
    });
    expect(config.swapPools[0].assets.map((a) => a.mainnetEquivalent)).toEqual([USDC_MAINNET, USDC_MAINNET]);
    expect(warnings).toEqual(
      expect.arrayContaining([
        "web3SignerUrl: the original router's key, read as remoteSignerUrl; rename it (docs/config.md)",
        "natsUrl: the original router's key, read as messagingUrl; rename it (docs/config.md)",
        "metrics_host: the original router's key, read as metricsHost; rename it (docs/config.md)",
        "chainConfig.1337.allowFulfillRelay: the original router's key, read as chainConfig.1337.allowRelay; rename it (docs/config.md)",
        "chainConfig.1337.confirmationTimeout: the original router's key, read as chainConfig.1337.confirmationTimeoutMs; rename it (docs/config.md)",
        "chainConfig.1337.gasPriceReplacementBumpPercent: the original router's key, read as chainConfig.1337.gasBumpPercent; rename it (docs/config.md)",
        expect.stringMatching(
          /^swapPools\[0\]\.mainnetEquivalent: .*read as mainnetEquivalent of assets\[0\], assets\[1\]/,
        ),
        ...[
          "allowRelay",
          "allowedTolerance",
          "priceCacheMode",
          "overbidAllowance",
          "overridechainRecommendedConfirmations",
        ].map((key) => expect.stringMatching(new RegExp(`^${key}: the original router's key, ignored: `))),
        ...["gelatoOracle", "syncProvidersInterval", "debug_logRpcCalls"].map((key) =>
          expect.stringMatching(new RegExp(`^chainConfig\\.1337\\.${key}: the original router's key, ignored: `)),
        ),
      ]),
    );
  });

  it("natsUrl keeps the router on the operator's messaging network, never the public one", () => {
    const { config } = loadConfig({ ...ourConfig(), natsUrl: PRIVATE_NATS }, {});
    expect(config.messagingUrl).toBe(PRIVATE_NATS);
    expect(config.messagingUrl).not.toBe(MESSAGING_DEFAULTS.mainnet.messagingUrl);
  });

  it("web3SignerUrl alone is a signer: no 'a signer is required'", () => {
    const raw = { ...ourConfig(), web3SignerUrl: SIGNER };
    delete (raw as Record<string, unknown>).mnemonic;
    expect(outcome(raw).problems).toEqual([]);
  });

  it.each([
    ["web3SignerUrl", "remoteSignerUrl", SIGNER],
    ["natsUrl", "messagingUrl", PRIVATE_NATS],
    ["metrics_host", "metricsHost", "127.0.0.1"],
  ])("%s next to %s is an error naming both", (original, ours, value) => {
    const raw = { ...ourConfig(), [original]: value, [ours]: value };
    expect(outcome(raw).problems).toContain(
      `${original}: the original router's name for ${ours}, which is set too; keep only ${ours}`,
    );
  });

  it("a bad value under a renamed key is named as the file spells it", () => {
    expect(outcome({ ...ourConfig(), natsUrl: "http://10.0.0.4:4222" }).problems).toEqual([
      expect.stringMatching(/^natsUrl \(read as messagingUrl\): must be /),
    ]);
    const raw = ourConfig();
    chain(raw, "1337").confirmationTimeout = 10;
    expect(outcome(raw).problems).toEqual([
      expect.stringMatching(
        /^chainConfig\.1337\.confirmationTimeout \(read as chainConfig\.1337\.confirmationTimeoutMs\): must be /,
      ),
    ]);
  });

  it.each([
    ["metrics_port", 8081, "metricsPort"],
    ["allowRelay", true, "chainConfig.<chainId>.allowRelay"],
    ["allowedTolerance", 5, "fixed at 10 %"],
  ])("top-level %s = %j is refused naming %s", (key, value, named) => {
    const { problems } = outcome({ ...ourConfig(), [key]: value });
    expect(problems).toEqual([expect.stringContaining(`${key}: the original router's key, not read here: `)]);
    expect(problems[0]).toContain(named);
  });

  it.each([
    ["gasPriceInitialBoostPercent", 30, "gasPriceMaximum"],
    ["gasPriceMinimum", "5000000000", "defaultInitialGasPrice"],
    ["gasPriceMaxIncreaseScalar", 200, "gasPriceMaximum"],
    ["hardcodedGasPrice", "30000000000", "defaultInitialGasPrice"],
    ["gasLimitInflation", 10, "remove it"],
    ["maxProviderCPS", 4, "remove it"],
  ])("chain-level %s is refused, naming what to do (%s)", (key, value, named) => {
    const raw = ourConfig();
    chain(raw, "1337")[key] = value;
    const { problems } = outcome(raw);
    expect(problems).toEqual([
      expect.stringContaining(`chainConfig.1337.${key}: the original router's key, not read here: `),
    ]);
    expect(problems[0]).toContain(named);
  });

  describe("a pool-level mainnetEquivalent", () => {
    it("moves onto each asset not on chain 1 that has none of its own", () => {
      const raw = ourConfig();
      (raw.swapPools as unknown[]).push({
        mainnetEquivalent: USDC_MAINNET,
        assets: [
          { chainId: 1, assetId: USDC_MAINNET },
          { chainId: 1337, assetId: TOKEN },
          { chainId: 1338, assetId: TOKEN, mainnetEquivalent: USDC_MAINNET.toLowerCase() },
        ],
      });
      const { config, warnings } = loadConfig(raw, {});
      expect(config.swapPools[1].assets.map((a) => a.mainnetEquivalent)).toEqual([
        undefined,
        USDC_MAINNET,
        USDC_MAINNET,
      ]);
      expect(config.swapPools[1]).not.toHaveProperty("mainnetEquivalent");
      expect(warnings).toContain(
        "swapPools[1].mainnetEquivalent: the original router's pool-level key, read as mainnetEquivalent of assets[1]; move it onto the assets (docs/config.md)",
      );
    });

    it("is an error where an asset sets another one", () => {
      const raw = ourConfig();
      const pool = (raw.swapPools as Array<{ assets: Array<Record<string, unknown>>; mainnetEquivalent?: string }>)[0];
      pool.mainnetEquivalent = USDC_MAINNET;
      pool.assets[1].mainnetEquivalent = TOKEN;
      expect(outcome(raw).problems).toEqual([
        "swapPools[0].assets[1].mainnetEquivalent: differs from swapPools[0].mainnetEquivalent (the original router's pool-level key); keep one",
      ]);
    });

    it("that is not an address is named where the file has it", () => {
      const raw = ourConfig();
      (raw.swapPools as Array<Record<string, unknown>>)[0].mainnetEquivalent = "usdc";
      expect(outcome(raw).problems).toEqual([
        expect.stringMatching(
          /^swapPools\[0\]\.mainnetEquivalent \(read as swapPools\[0\]\.assets\[0\]\.mainnetEquivalent\): must be a valid address/,
        ),
        expect.stringMatching(
          /^swapPools\[0\]\.mainnetEquivalent \(read as swapPools\[0\]\.assets\[1\]\.mainnetEquivalent\): must be a valid address/,
        ),
      ]);
    });
  });
});

describe("the original router's NXTP_* environment variables", () => {
  const TOKEN_VALUE = "token-from-the-original-variable";

  it("NXTP_ADMIN_TOKEN and NXTP_MNEMONIC are read as ROUTER_ADMIN_TOKEN and ROUTER_MNEMONIC, with a warning", () => {
    const raw = ourConfig();
    delete raw.adminToken;
    delete raw.mnemonic;
    const env = configEnvOf({ NXTP_ADMIN_TOKEN: TOKEN_VALUE, NXTP_MNEMONIC: MNEMONIC, PATH: "/bin" });
    const { config, warnings } = loadConfig(raw, env);
    expect(config.adminToken).toBe(TOKEN_VALUE);
    expect(config.mnemonic).toBe(MNEMONIC);
    expect(warnings).toEqual(
      expect.arrayContaining([
        "(env) NXTP_ADMIN_TOKEN: the original router's name, read as ROUTER_ADMIN_TOKEN; rename it",
        "(env) NXTP_MNEMONIC: the original router's name, read as ROUTER_MNEMONIC; rename it",
      ]),
    );
  });

  it("a renamed variable set next to ours with another value is an error, never a silent choice", () => {
    const env = configEnvOf({ NXTP_ADMIN_TOKEN: TOKEN_VALUE, ROUTER_ADMIN_TOKEN: "another-admin-token-value" });
    const { problems } = outcome(ourConfig(), env);
    expect(problems).toEqual([
      "(env) NXTP_ADMIN_TOKEN: the original router's name for ROUTER_ADMIN_TOKEN, which is set to another value; unset one",
    ]);
    expect(problems.join("\n")).not.toContain(TOKEN_VALUE);
  });

  it.each([
    ["NXTP_CONFIG_FILE", "/etc/router/config.json", "ROUTER_CONFIG_FILE"],
    ["NXTP_CONFIG", "{}", "ROUTER_CONFIG_FILE"],
    ["NXTP_NATS_URL", PRIVATE_NATS, "messagingUrl"],
    ["NXTP_AUTH_URL", "http://10.0.0.4:5040", "authUrl"],
    ["NXTP_NETWORK", "testnet", "network"],
    ["NXTP_WEB3_SIGNER_URL", SIGNER, "remoteSignerUrl"],
    ["NXTP_ROUTER_CONTRACT_ADDRESS", TM, "routerContractAddress"],
    ["NXTP_CHAIN_CONFIG", "{}", "chainConfig"],
    ["NXTP_SWAP_POOLS", "[]", "swapPools"],
    ["NXTP_LOG_LEVEL", "debug", "logLevel"],
    ["NXTP_PORT", "8080", "port"],
    ["NXTP_HOST", "0.0.0.0", "host"],
    ["NXTP_METRICS_PORT", "8081", "metricsPort"],
    ["NXTP_METRICS_HOST", "0.0.0.0", "metricsHost"],
    ["NXTP_REQUEST_LIMIT", "500", "requestLimit"],
    ["NXTP_CLEAN_UP_MODE", "true", "cleanUpMode"],
    ["NXTP_DIAGNOSTIC_MODE", "true", "diagnosticMode"],
    ["NXTP_ALLOW_RELAY", "true", "allowRelay"],
    ["NXTP_ALLOWED_TOLERANCE", "10", "fixed at 10 %"],
    ["NXTP_PRICE_CACHE_MODE", "true", "always cached"],
    ["NXTP_OVERBID_ALLOWANCE", "150", "never promises more"],
    ["NXTP_OVERRIDE_CHAIN_RECOMMENDED_CONFIRMATIONS", "true", "a warning here"],
    ["NXTP_SOMETHING_ELSE", "x", "not read by this router"],
  ])("%s is refused, naming %s", (name, value, named) => {
    const { problems } = outcome(ourConfig(), configEnvOf({ [name]: value }));
    expect(problems).toEqual([expect.stringContaining(`(env) ${name}: `)]);
    expect(problems[0]).toContain(named);
  });

  it("an empty NXTP_* variable counts as unset, as it did in the original", () => {
    expect(outcome(ourConfig(), configEnvOf({ NXTP_NATS_URL: "" })).problems).toEqual([]);
  });
});
