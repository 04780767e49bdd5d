import { ZeroAddress, Wallet, getAddress } from "ethers";
import { createPriceSources } from "../../shared/protocol/price-sources";
import { loadConfig } from "../../shared/config";
import { localConfigJson, type LocalChain } from "../../scripts/local/local-config";
import { localPaths } from "../../scripts/local/paths";
import { pm2Env } from "../../scripts/local/pm2";
import { parseOptions } from "../../scripts/local/start";

const addr = (n: number): string => getAddress(`0x${n.toString(16).padStart(40, "0")}`);
const lower = (n: number): string => addr(n).toLowerCase();
const chain = (chainId: number, base: number): LocalChain => ({
  chainId,
  rpcUrl: `http://127.0.0.1:${8000 + base}`,
  transactionManager: addr(base + 1),
  multicall: addr(base + 2),
  priceOracle: addr(base + 3),
  token: addr(base + 4),
});

function config(): ReturnType<typeof loadConfig> {
  const mnemonic = Wallet.createRandom().mnemonic?.phrase ?? "";
  return loadConfig(
    localConfigJson({
      mnemonic,
      adminToken: "0123456789abcdef0123456789abcdef",
      adminPort: 9999,
      redisUrl: "redis://127.0.0.1:6390",
      messagingUrl: "nats://127.0.0.1:4300",
      authUrl: "http://127.0.0.1:5300",
      mainnet: chain(1, 10),
      swapChains: [chain(1337, 20), chain(1338, 30)],
    }),
    {},
  );
}

describe("npm run local: the config it writes", () => {
  it("is a valid network-local config with no warnings, on loopback and the stack's own endpoints", () => {
    const { config: c, warnings } = config();
    expect(warnings).toEqual([]);
    expect(c.network).toBe("local");
    expect(c.host).toBe("127.0.0.1");
    expect([c.messagingUrl, c.authUrl, c.redisUrl]).toEqual([
      "nats://127.0.0.1:4300",
      "http://127.0.0.1:5300",
      "redis://127.0.0.1:6390",
    ]);
    expect(Object.keys(c.chainConfig).sort()).toEqual(["1", "1337", "1338"]);
    // The mainnet deployment's oracle and multicall (no code on a local chain 1) must not leak in as defaults.
    expect(c.chainConfig["1"].priceOracleAddress).toBe(addr(13));
    expect(c.chainConfig["1"].multicallAddress).toBe(addr(12));
    expect(c.chainConfig["1337"].confirmations).toBe(1);
  });

  it("prices every fee on chain 1's oracle: the test token through its mainnet equivalent, ETH at address(0)", () => {
    const sources = createPriceSources(config().config);
    expect(sources.targets()).toEqual(new Map([[1, expect.arrayContaining([lower(14), ZeroAddress])]]));
    expect(sources.targets().get(1)).toHaveLength(2);
    expect(sources.asset(1337, addr(24))).toEqual({ chainId: 1, address: lower(14) });
    expect(sources.native(1338)).toEqual({ chainId: 1, address: ZeroAddress });
    expect([...sources.gasPriceChains()].sort()).toEqual([1337, 1338]);
  });
});

describe("npm run local: options", () => {
  it("reuses a redis or nats given by flag (which wins) or environment", () => {
    expect(parseOptions([], {})).toEqual({ redisUrl: undefined, natsUrl: undefined });
    expect(parseOptions(["--nats-url=nats://127.0.0.1:4222"], { LOCAL_REDIS_URL: "redis://127.0.0.1:6379" })).toEqual({
      redisUrl: "redis://127.0.0.1:6379",
      natsUrl: "nats://127.0.0.1:4222",
    });
    expect(parseOptions(["--redis-url=redis://a:1"], { LOCAL_REDIS_URL: "redis://b:2" }).redisUrl).toBe("redis://a:1");
  });

  it("refuses unknown arguments and URLs of the wrong scheme", () => {
    expect(() => parseOptions(["--verbose"], {})).toThrow(/unknown argument/);
    expect(() => parseOptions(["--nats-url=http://x"], {})).toThrow(/nats:\/\//);
    expect(() => parseOptions([], { LOCAL_REDIS_URL: "http://x" })).toThrow(/redis:\/\//);
  });
});

describe("npm run local: the processes' environment", () => {
  it("keeps the shell's config overrides and the original router's NXTP_* variables out", () => {
    const names = ["ROUTER_MNEMONIC", "REDIS_URL", "NXTP_MNEMONIC", "NXTP_NATS_URL"];
    const saved = names.map((name) => process.env[name]);
    try {
      names.forEach((name) => (process.env[name] = "from-the-shell"));
      const env = pm2Env(localPaths("/tmp/router-checkout"));
      expect(env.ROUTER_CONFIG_FILE).toBe(localPaths("/tmp/router-checkout").configFile);
      expect(names.filter((name) => env[name] !== undefined)).toEqual([]);
    } finally {
      names.forEach((name, i) => (saved[i] === undefined ? delete process.env[name] : (process.env[name] = saved[i])));
    }
  });
});
