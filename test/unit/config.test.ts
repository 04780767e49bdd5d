import { ConfigError, loadConfig, type ConfigEnv } from "../../shared/config";
import { MNEMONIC, TM, TOKEN, validConfig } from "./config-fixtures";

function problemsOf(raw: unknown, env: ConfigEnv = {}): string[] {
  try {
    loadConfig(raw, env);
  } catch (err) {
    if (err instanceof ConfigError) {
      return [...err.problems];
    }
    throw err;
  }
  throw new Error("expected the config to be refused");
}

/** Deep-sets `path` (dot-separated, numeric parts index arrays) on a fresh valid config. */
function withValue(path: string, value: unknown): Record<string, unknown> {
  const config = validConfig();
  const parts = path.split(".");
  let node: Record<string, unknown> = config;
  for (const part of parts.slice(0, -1)) {
    node = node[part] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1];
  if (value === undefined) {
    delete node[last];
  } else {
    node[last] = value;
  }
  return config;
}

describe("loadConfig: a valid file", () => {
  it("fills every default of the top-level keys and the chain object (docs/config.md)", () => {
    const { config } = loadConfig(validConfig(), {});
    expect(config).toMatchObject({
      logLevel: "info",
      port: 8080,
      host: "0.0.0.0",
      network: "mainnet",
      requestLimit: 500,
      cleanUpMode: false,
      diagnosticMode: false,
      redisUrl: "redis://127.0.0.1:6379",
      redisPrefix: "router",
    });
    const chain = config.chainConfig["1337"];
    expect(chain).toMatchObject({
      chainId: 1337,
      subgraph: [],
      analyticsSubgraph: [],
      minGas: "100000000000000000",
      gasStations: [],
      allowRelay: false,
      relayerFeeThreshold: 10,
      confirmations: 1,
      subgraphSyncBuffer: 25,
      routerContractRelayerAsset: "0x0000000000000000000000000000000000000000",
      gasPriceMaximum: "1500000000000",
      gasBumpPercent: 20,
      maxGasBumps: 5,
      confirmationTimeoutMs: 90000,
    });
    expect(chain.defaultInitialGasPrice).toBeUndefined();
  });

  it("takes contract addresses from the nxtp-contracts deployments when not configured", () => {
    const { config } = loadConfig(validConfig(), {});
    expect(config.chainConfig["1"].transactionManagerAddress).toBe("0x31eFc4AeAA7c39e54A33FDc3C46ee2Bd70ae0A09");
    expect(config.chainConfig["1"].priceOracleAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(config.chainConfig["1"].confirmations).toBe(7);
    // No oracle is deployed on a local chain: it stays unset instead of failing.
    expect(config.chainConfig["1337"].priceOracleAddress).toBeUndefined();
  });

  it("derives per-chain confirmation and sync-buffer defaults from the chain data snapshot", () => {
    const raw = validConfig();
    (raw.chainConfig as Record<string, unknown>)["137"] = { providers: ["https://polygon.example"] };
    const { config } = loadConfig(raw, {});
    expect(config.chainConfig["137"].confirmations).toBe(60);
    expect(config.chainConfig["137"].subgraphSyncBuffer).toBe(180);
  });

  it("checksum-normalises every address", () => {
    const raw = withValue("swapPools", [
      {
        assets: [
          { chainId: 1337, assetId: TOKEN.toLowerCase() },
          { chainId: 1338, assetId: TOKEN.toLowerCase() },
        ],
      },
    ]);
    (raw.chainConfig as Record<string, Record<string, unknown>>)["1337"].transactionManagerAddress = TM.toLowerCase();
    raw.routerContractAddress = TOKEN.toLowerCase();
    const { config } = loadConfig(raw, {});
    expect(config.swapPools[0].assets[0].assetId).toBe(TOKEN);
    expect(config.chainConfig["1337"].transactionManagerAddress).toBe(TM);
    expect(config.routerContractAddress).toBe(TOKEN);
  });

  it("uses the messaging endpoints of the network", () => {
    const local = loadConfig({ ...validConfig(), network: "local" }, {}).config;
    expect(local.messagingUrl).toBe("nats://127.0.0.1:4222");
    expect(local.authUrl).toBe("http://127.0.0.1:5040");
    const mainnet = loadConfig(validConfig(), {}).config;
    expect(mainnet.messagingUrl.split(",")).toHaveLength(3);
    expect(mainnet.authUrl).toBe("https://auth.connext.network");
  });

  it("lets the environment supply secrets and the Redis URL", () => {
    const raw = withValue("mnemonic", undefined);
    delete raw.adminToken;
    const { config } = loadConfig(raw, {
      ROUTER_ADMIN_TOKEN: "token-from-the-environment",
      ROUTER_MNEMONIC: MNEMONIC,
      REDIS_URL: "redis://10.0.0.5:6380/2",
    });
    expect(config.adminToken).toBe("token-from-the-environment");
    expect(config.mnemonic).toBe(MNEMONIC);
    expect(config.redisUrl).toBe("redis://10.0.0.5:6380/2");
  });

  it("names each file value the environment replaces, never the value", () => {
    const raw: Record<string, unknown> = {
      ...validConfig(),
      redis: { sentinels: [{ host: "10.0.0.1", port: 26379 }], name: "primary", minReplicas: 1 },
    };
    const { config, warnings } = loadConfig(raw, {
      ROUTER_ADMIN_TOKEN: "token-from-the-environment",
      ROUTER_MNEMONIC: MNEMONIC,
      REDIS_URL: "redis://10.0.0.5:6380/2",
    });
    expect(config.redis).toEqual({ url: "redis://10.0.0.5:6380/2" });
    expect(warnings).toEqual(
      expect.arrayContaining([
        "adminToken: replaced by ROUTER_ADMIN_TOKEN from the environment; the file's value is not used",
        "mnemonic: replaced by ROUTER_MNEMONIC from the environment; the file's value is not used",
        "redis: sentinels, name replaced by REDIS_URL from the environment; not used",
      ]),
    );
    expect(warnings.join("\n")).not.toMatch(/test test|token-from|10\.0\.0\.5/);
  });

  it("accepts a remote signer instead of a mnemonic", () => {
    const raw = withValue("mnemonic", undefined);
    raw.remoteSignerUrl = "http://127.0.0.1:9000";
    expect(loadConfig(raw, {}).config.remoteSignerUrl).toBe("http://127.0.0.1:9000");
  });

  it("warns, without failing, on low confirmations", () => {
    const raw: Record<string, unknown> = { ...validConfig() };
    (raw.chainConfig as Record<string, Record<string, unknown>>)["1"].confirmations = 2;
    const { warnings } = loadConfig(raw, {});
    expect(warnings).toEqual(
      expect.arrayContaining([expect.stringMatching(/^chainConfig\.1\.confirmations: 2 is below the recommended 7/)]),
    );
  });

  it("returns a deeply frozen object", () => {
    const { config } = loadConfig(validConfig(), {});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.chainConfig["1"].providers)).toBe(true);
  });
});

describe("loadConfig: every key refuses a bad value and names it", () => {
  const cases: Array<[string, unknown, string]> = [
    ["adminToken", undefined, "adminToken"],
    ["adminToken", "", "adminToken"],
    ["adminToken", 42, "adminToken"],
    ["routerContractAddress", "0x1234", "routerContractAddress"],
    ["routerContractAddress", "0x5fbdb2315678afecb367f032d93F642f64180aa3", "routerContractAddress"],
    ["remoteSignerUrl", "not a url", "remoteSignerUrl"],
    ["mnemonic", "one two three", "mnemonic"],
    ["chainConfig", undefined, "chainConfig"],
    ["chainConfig", {}, "chainConfig"],
    ["chainConfig", [], "chainConfig"],
    ["chainConfig.mainnet", { providers: ["http://127.0.0.1:1"] }, "chainConfig.mainnet"],
    ["chainConfig.1337.providers", undefined, "chainConfig.1337.providers"],
    ["chainConfig.1337.providers", [], "chainConfig.1337.providers"],
    ["chainConfig.1337.providers", ["ftp://127.0.0.1"], "chainConfig.1337.providers[0]"],
    ["chainConfig.1337.subgraph", ["nope"], "chainConfig.1337.subgraph[0]"],
    ["chainConfig.1337.analyticsSubgraph", [7], "chainConfig.1337.analyticsSubgraph[0]"],
    ["chainConfig.1337.transactionManagerAddress", "0xzz", "chainConfig.1337.transactionManagerAddress"],
    ["chainConfig.1337.priceOracleAddress", "oracle", "chainConfig.1337.priceOracleAddress"],
    ["chainConfig.1337.multicallAddress", "0x01", "chainConfig.1337.multicallAddress"],
    ["chainConfig.1337.confirmations", 0, "chainConfig.1337.confirmations"],
    ["chainConfig.1337.confirmations", 1.5, "chainConfig.1337.confirmations"],
    ["chainConfig.1337.minGas", "0.1", "chainConfig.1337.minGas"],
    ["chainConfig.1337.minGas", 100, "chainConfig.1337.minGas"],
    ["chainConfig.1337.gasStations", ["ws://gas.example"], "chainConfig.1337.gasStations[0]"],
    ["chainConfig.1337.allowRelay", "yes", "chainConfig.1337.allowRelay"],
    ["chainConfig.1337.relayerFeeThreshold", 101, "chainConfig.1337.relayerFeeThreshold"],
    ["chainConfig.1337.relayerFeeThreshold", -1, "chainConfig.1337.relayerFeeThreshold"],
    ["chainConfig.1337.subgraphSyncBuffer", 0, "chainConfig.1337.subgraphSyncBuffer"],
    ["chainConfig.1337.defaultInitialGasPrice", "1e9", "chainConfig.1337.defaultInitialGasPrice"],
    ["chainConfig.1337.routerContractRelayerAsset", "native", "chainConfig.1337.routerContractRelayerAsset"],
    ["chainConfig.1337.gasPriceMaximum", "1.5", "chainConfig.1337.gasPriceMaximum"],
    ["chainConfig.1337.gasBumpPercent", 5, "chainConfig.1337.gasBumpPercent"],
    ["chainConfig.1337.maxGasBumps", 21, "chainConfig.1337.maxGasBumps"],
    ["chainConfig.1337.confirmationTimeoutMs", 10, "chainConfig.1337.confirmationTimeoutMs"],
    ["swapPools", undefined, "swapPools"],
    ["swapPools", {}, "swapPools"],
    ["swapPools.0.name", "", "swapPools[0].name"],
    ["swapPools.0.assets", undefined, "swapPools[0].assets"],
    ["swapPools.0.assets", [{ chainId: 1337, assetId: TOKEN }], "swapPools[0].assets"],
    ["swapPools.0.assets.1.assetId", "0xabc", "swapPools[0].assets[1].assetId"],
    ["swapPools.0.assets.1.chainId", "1338", "swapPools[0].assets[1].chainId"],
    ["swapPools.0.assets.1.chainId", 0, "swapPools[0].assets[1].chainId"],
    ["logLevel", "verbose", "logLevel"],
    ["port", 0, "port"],
    ["port", 70000, "port"],
    ["port", "8080", "port"],
    ["host", "not a host!", "host"],
    ["network", "devnet", "network"],
    ["requestLimit", -1, "requestLimit"],
    ["requestLimit", 0.5, "requestLimit"],
    ["cleanUpMode", "true", "cleanUpMode"],
    ["diagnosticMode", 1, "diagnosticMode"],
    ["redisUrl", "http://127.0.0.1:6379", "redisUrl"],
    ["redisPrefix", "a:b", "redisPrefix"],
    ["messagingUrl", "http://127.0.0.1:4222", "messagingUrl"],
    ["messagingUrl", "nats://127.0.0.1:4222,ftp://x", "messagingUrl"],
    ["authUrl", "nats://127.0.0.1:5040", "authUrl"],
  ];

  it.each(cases)("%s = %j is refused with a problem naming %s", (path, value, expectedPath) => {
    const problems = problemsOf(withValue(path, value));
    expect(problems.map((p) => p.slice(0, expectedPath.length + 2))).toContain(`${expectedPath}: `);
  });

  it("reports every problem at once, one line each", () => {
    const raw = withValue("port", 0);
    raw.logLevel = "loud";
    (raw.chainConfig as Record<string, Record<string, unknown>>)["1337"].minGas = "x";
    const problems = problemsOf(raw);
    expect(problems).toHaveLength(3);
    expect(problems.filter((p) => p.includes("\n"))).toEqual([]);
  });

  it("never echoes a secret or a value in its messages", () => {
    const raw = withValue("mnemonic", "correct horse battery staple secretword");
    raw.adminToken = 12345;
    (raw.chainConfig as Record<string, Record<string, unknown>>)["1337"].minGas = "SECRETVALUE";
    const text = problemsOf(raw).join("\n");
    expect(text).not.toMatch(/horse|secretword|SECRETVALUE|12345/);
  });
});

describe("loadConfig: an unknown key is an error naming the closest known key", () => {
  const cases: Array<[string, (raw: Record<string, unknown>) => void, string]> = [
    [
      "top level",
      (raw) => (raw.redisURL = "redis://10.0.0.9:6379"),
      "redisURL: unknown key (did you mean `redisUrl`?)",
    ],
    [
      "a chain",
      (raw) => ((raw.chainConfig as Record<string, Record<string, unknown>>)["1337"].confirmation = 3),
      "chainConfig.1337.confirmation: unknown key (did you mean `confirmations`?)",
    ],
    [
      "a pool",
      (raw) => ((raw.swapPools as Array<Record<string, unknown>>)[0].nmae = "USDC"),
      "swapPools[0].nmae: unknown key (did you mean `name`?)",
    ],
    [
      "an asset",
      (raw) =>
        ((raw.swapPools as Array<{ assets: Array<Record<string, unknown>> }>)[0].assets[1].mainnetEquivalant = TOKEN),
      "swapPools[0].assets[1].mainnetEquivalant: unknown key (did you mean `mainnetEquivalent`?)",
    ],
    ["redis", (raw) => (raw.redis = { URL: "redis://10.0.0.9:6379" }), "redis.URL: unknown key (did you mean `url`?)"],
    [
      "a redis TLS object",
      (raw) => (raw.redis = { sentinels: [{ host: "10.0.0.1", port: 26379 }], name: "p", tls: { servrname: "r" } }),
      "redis.tls.servrname: unknown key (did you mean `servername`?)",
    ],
    [
      "a sentinel address",
      (raw) => (raw.redis = { sentinels: [{ host: "10.0.0.1", prot: 26379 }], name: "p" }),
      "redis.sentinels[0].prot: unknown key (did you mean `port`?)",
    ],
    ["far from any key", (raw) => (raw.zzzzzzzzzzzz = 1), "zzzzzzzzzzzz: unknown key (the closest known key is"],
  ];

  it.each(cases)("in %s", (_level, mutate, expected) => {
    const raw = validConfig();
    mutate(raw);
    expect(problemsOf(raw)).toEqual(expect.arrayContaining([expect.stringContaining(expected)]));
  });

  it("never falls back to the default Redis because redisUrl was misspelt", () => {
    expect(() => loadConfig({ ...validConfig(), redisURL: "redis://10.0.0.9:6379" }, {})).toThrow(ConfigError);
  });
});

describe("loadConfig: every problem of a file in one run", () => {
  it("reports a typo, a schema problem and a chain rule together", () => {
    const raw: Record<string, unknown> = { ...validConfig(), redisURL: "redis://10.0.0.9:6379" };
    (raw.chainConfig as Record<string, Record<string, unknown>>)["1338"].providers = ["127.0.0.1:18546"];
    (raw.swapPools as Array<{ assets: Array<Record<string, unknown>> }>)[0].assets[0].chainId = 10;
    const problems = problemsOf(raw);
    expect(problems).toEqual(
      expect.arrayContaining([
        "redisURL: unknown key (did you mean `redisUrl`?)",
        expect.stringMatching(/^chainConfig\.1338\.providers\[0\]: /),
        "swapPools[0].assets[0].chainId: chain 10 is not in chainConfig",
      ]),
    );
    expect(problems).toHaveLength(3);
  });

  it("reports the cross-key rules next to schema problems", () => {
    const raw = withValue("mnemonic", undefined);
    raw.port = "8080";
    delete (raw.chainConfig as Record<string, unknown>)["1"];
    raw.redis = { url: "redis://127.0.0.1:6379" };
    raw.redisUrl = "redis://127.0.0.1:6379";
    expect(problemsOf(raw)).toEqual([
      expect.stringMatching(/^port: /),
      expect.stringMatching(/^remoteSignerUrl: a signer is required/),
      expect.stringMatching(/^redis: set either redisUrl or redis/),
      expect.stringMatching(/^chainConfig\.1: chain 1 must be configured/),
    ]);
  });

  it("survives values of the wrong shape at every level", () => {
    for (const [key, value] of [
      ["chainConfig", "x"],
      ["chainConfig", { "1": null, "1337": [] }],
      ["swapPools", [null, { assets: "x" }, { assets: [null, 7] }]],
      ["redis", null],
      ["adminToken", 7],
    ] as const) {
      expect(problemsOf({ ...validConfig(), [key]: value }).length).toBeGreaterThan(0);
    }
  });
});

describe("loadConfig: cross-key rules", () => {
  it("requires chain 1 (docs/config.md)", () => {
    const raw = validConfig();
    delete (raw.chainConfig as Record<string, unknown>)["1"];
    expect(problemsOf(raw)).toEqual([expect.stringMatching(/^chainConfig\.1: chain 1 must be configured/)]);
  });

  it("refuses both signer sources", () => {
    const raw = { ...validConfig(), remoteSignerUrl: "http://127.0.0.1:9000" };
    expect(problemsOf(raw)).toEqual([
      expect.stringMatching(/^remoteSignerUrl: set either remoteSignerUrl or mnemonic, not both/),
    ]);
  });

  it("refuses both signer sources when the mnemonic comes from the environment", () => {
    const raw = { ...withValue("mnemonic", undefined), remoteSignerUrl: "http://127.0.0.1:9000" };
    expect(problemsOf(raw, { ROUTER_MNEMONIC: MNEMONIC })[0]).toMatch(/^remoteSignerUrl: .*not both/);
  });

  it("refuses neither signer source", () => {
    expect(problemsOf(withValue("mnemonic", undefined))).toEqual([
      expect.stringMatching(/^remoteSignerUrl: a signer is required/),
    ]);
  });

  it("requires every swap-pool chain to be configured", () => {
    const raw = withValue("swapPools.0.assets.1.chainId", 10);
    expect(problemsOf(raw)).toEqual(["swapPools[0].assets[1].chainId: chain 10 is not in chainConfig"]);
  });

  it("requires a TransactionManager for a chain without a deployment", () => {
    const raw = withValue("chainConfig.1338.transactionManagerAddress", undefined);
    expect(problemsOf(raw)).toEqual([
      expect.stringMatching(
        /^chainConfig\.1338\.transactionManagerAddress: no TransactionManager deployment is known for chain 1338/,
      ),
    ]);
  });

  it("refuses a file that is not a JSON object", () => {
    expect(problemsOf([])).toEqual(["(root): the config must be a JSON object"]);
    expect(problemsOf("config")).toEqual(["(root): the config must be a JSON object"]);
  });
});
