import { ContractFactory, getCreateAddress } from "ethers";
import { createFeeCache } from "../../services/auction/fee-cache";
import { assetKey } from "../../shared/protocol/price-sources";
import { runRefresher } from "../../services/auction/refreshers";
import { packageArtifact } from "../../scripts/nxtp-package";
import { createChainProvider, type ChainProvider } from "../../shared/chain/chain-provider";
import type { RouterConfig } from "../../shared/config/types";
import { anvilProvider, anvilWallet, startAnvil, type Anvil } from "../harness/anvil";
import { waitFor } from "../harness/wait";
import { captureLogs } from "../harness/logs";

/**
 * A refresh pass that fails leaves a value cold, and a cold value refuses every bid that needs it: the refresher
 * retries within about a second instead of waiting out its interval (here a minute).
 */
describe("auction refresher", () => {
  let anvil: Anvil;
  let provider: ChainProvider;
  const abort = new AbortController();

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1337 });
  });

  afterAll(async () => {
    abort.abort();
    provider?.destroy();
    await anvil?.stop();
  });

  it("retries a failed read soon, not after the refresh interval", async () => {
    const rpc = anvilProvider(anvil.url, 1337);
    const deployer = anvilWallet(0, rpc);
    // The token's address is known before it exists: the first pass fails to read its decimals.
    const token = getCreateAddress({ from: deployer.address, nonce: await rpc.getTransactionCount(deployer.address) });
    const logs = captureLogs();
    provider = createChainProvider({ chainId: 1337, urls: [anvil.url], logger: logs.logger });
    const cache = createFeeCache();
    const deps = { config: {} as RouterConfig, provider, cache, logger: logs.logger, nowMs: () => Date.now() };
    const plan = { chainId: 1337, priceAddresses: [], gasPrice: false, decimalsOf: [token] };
    const loop = runRefresher(plan, deps, 60_000, abort.signal);
    await waitFor("a failed decimals read", async () =>
      logs.lines().some((l) => l.message === "auction cache refresh failed") ? true : undefined,
    );
    expect([...cache.decimals.keys()]).not.toContain(assetKey(1337, token));

    const { abi, bytecode } = packageArtifact("TestERC20");
    const deployed = await new ContractFactory(abi, bytecode, deployer).deploy();
    await deployed.waitForDeployment();
    expect(await deployed.getAddress()).toBe(token);
    const readAtMs = Date.now();
    await waitFor("decimals read again", async () => cache.decimals.get(assetKey(1337, token)), 10_000);
    expect(cache.decimals.get(assetKey(1337, token))).toBe(18);
    expect(Date.now() - readAtMs).toBeLessThan(10_000);
    abort.abort();
    await loop;
    rpc.destroy();
  }, 60_000);
});
