import { Transaction, parseEther, type JsonRpcProvider } from "ethers";
import { createChainProvider, type ChainProvider } from "../../shared/chain/chain-provider";
import { ChainProviderConfigError } from "../../shared/chain/errors";
import { TransactionRevertedError } from "../../shared/chain/errors";
import { anvilWallet, startAnvil, type Anvil } from "../harness/anvil";
import { liveChildPids } from "../harness/child-process";
import { getFreePort } from "../harness/free-port";
import { captureLogs } from "../harness/logs";
import { waitFor } from "../harness/wait";
import type { Logger } from "../../shared/logging/create-logger";

/** Two anvils with one chain id stand for two providers of one chain; their heads can differ on purpose. */
const CHAIN_ID = 1337;
/** A key-like path segment, as RPC vendors put API keys in URLs: it must never reach a log line. */
const API_KEY = "SECRETKEY0123456789abcdef";

async function signedTransfer(nonce: number): Promise<string> {
  const wallet = anvilWallet(3);
  return wallet.signTransaction({
    type: 2,
    chainId: CHAIN_ID,
    nonce,
    to: anvilWallet(4).address,
    value: parseEther("0.01"),
    gasLimit: 21_000n,
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  });
}

function receiptOf(chain: ChainProvider, hash: string): Promise<unknown> {
  return waitFor(
    `the receipt of ${hash}`,
    async () => (await chain.getTransactionReceipt(hash)) ?? undefined,
    2_000,
    20,
  );
}

describe("ChainProvider (two anvils, one chain id)", () => {
  let primary: Anvil;
  let fallback: Anvil;
  const providers: ChainProvider[] = [];
  const make = (urls: string[], logger: Logger, maxLagBlocks?: number): ChainProvider => {
    const p = createChainProvider({ chainId: CHAIN_ID, urls, logger, maxLagBlocks, requestTimeoutMs: 2000 });
    providers.push(p);
    return p;
  };

  beforeEach(async () => {
    [primary, fallback] = await Promise.all([startAnvil({ chainId: CHAIN_ID }), startAnvil({ chainId: CHAIN_ID })]);
  });

  afterEach(async () => {
    providers.splice(0).forEach((p) => p.destroy());
    await Promise.all([primary?.stop(), fallback?.stop()]);
  });

  afterAll(() => {
    expect(liveChildPids()).toEqual([]);
  });

  it("reads and broadcasts through the fallback when the primary URL is a closed port, naming it redacted", async () => {
    const closedUrl = `http://127.0.0.1:${await getFreePort()}/v2/${API_KEY}`;
    const logs = captureLogs();
    const chain = make([closedUrl, fallback.url], logs.logger);

    await fallback.mine(3);
    await expect(chain.getBlockNumber()).resolves.toBe(3);
    expect(chain.lastServedBy()).toBe(fallback.url);

    const result = await chain.broadcast(await signedTransfer(0));
    expect(result.acceptedBy).toEqual([fallback.url]);
    // Automine mines right after the send returns; the receipt can lag it by a moment.
    await expect(receiptOf(chain, result.hash)).resolves.toMatchObject({ status: 1 });

    const skipped = logs.lines().filter((l) => l.message === "provider unavailable, skipping it");
    expect(skipped.length).toBeGreaterThan(0);
    expect(skipped[0]).toMatchObject({ level: "warn", provider: expect.stringContaining("/v2/***") });
    expect(logs.text()).not.toContain(API_KEY);
    expect(chain.health().map((h) => h.healthy)).toEqual([false, true]);
  });

  it("moves to the fallback when the primary dies after it was healthy", async () => {
    const logs = captureLogs();
    const chain = make([primary.url, fallback.url], logs.logger);
    await expect(chain.getBlockNumber()).resolves.toBe(0);
    expect(chain.lastServedBy()).toBe(primary.url);

    await primary.stop();
    await fallback.mine(2);
    await expect(chain.getBlockNumber()).resolves.toBe(2);
    expect(chain.lastServedBy()).toBe(fallback.url);
    expect(
      logs.lines().some((l) => l.message === "provider unavailable, skipping it" && l.provider === primary.url),
    ).toBe(true);
  });

  it("skips a provider that lags more than maxLagBlocks behind the best head", async () => {
    const logs = captureLogs();
    await fallback.mine(20);
    const chain = make([primary.url, fallback.url], logs.logger, 5);

    await expect(chain.getBlockNumber()).resolves.toBe(20);
    expect(chain.lastServedBy()).toBe(fallback.url);
    expect(chain.health()).toEqual([
      expect.objectContaining({ label: primary.url, head: 0, lagging: true }),
      expect.objectContaining({ label: fallback.url, head: 20, lagging: false }),
    ]);
    expect(logs.lines()).toContainEqual(
      expect.objectContaining({
        level: "warn",
        message: "provider lags behind, skipping it",
        provider: primary.url,
        lagBlocks: 20,
      }),
    );
  });

  it("uses the primary while its lag stays within maxLagBlocks", async () => {
    await fallback.mine(3);
    const chain = make([primary.url, fallback.url], captureLogs().logger, 5);
    await expect(chain.getBlockNumber()).resolves.toBe(0);
    expect(chain.lastServedBy()).toBe(primary.url);
  });

  it("throws a revert at once instead of asking the next provider", async () => {
    const reverter = "0x00000000000000000000000000000000000000aa";
    // PUSH1 0 PUSH1 0 REVERT on both chains.
    await Promise.all([primary, fallback].map((a) => a.rpc("anvil_setCode", [reverter, "0x60006000fd"])));
    const chain = make([primary.url, fallback.url], captureLogs().logger);
    const asked: JsonRpcProvider[] = [];
    await expect(
      chain.read((p) => {
        asked.push(p);
        return p.call({ to: reverter, data: "0x" });
      }),
    ).rejects.toBeInstanceOf(TransactionRevertedError);
    expect(asked).toHaveLength(1);
  });

  it("skips websocket URLs with a warning and refuses a chain with no http(s) URL", () => {
    const logs = captureLogs();
    const chain = make([`wss://ws.example/${API_KEY}`, fallback.url], logs.logger);
    expect(chain.health().map((h) => h.label)).toEqual([fallback.url]);
    expect(logs.lines()).toContainEqual(
      expect.objectContaining({ level: "warn", message: "websocket provider skipped: list an http(s) URL instead" }),
    );
    expect(logs.text()).not.toContain(API_KEY);
    expect(() => make(["ws://127.0.0.1:1"], logs.logger)).toThrow(ChainProviderConfigError);
  });

  it("never uses a provider that serves another chain", async () => {
    const other = await startAnvil({ chainId: 1338 });
    try {
      const logs = captureLogs();
      const chain = make([other.url, fallback.url], logs.logger);
      await fallback.mine(4);
      await expect(chain.getBlockNumber()).resolves.toBe(4);
      expect(chain.lastServedBy()).toBe(fallback.url);
      expect(logs.lines()).toContainEqual(
        expect.objectContaining({ level: "error", provider: other.url, answeredChainId: 1338 }),
      );
    } finally {
      await other.stop();
    }
  });

  it("counts a broadcast as sent when a provider already has the transaction", async () => {
    await Promise.all([primary.setAutomine(false), fallback.setAutomine(false)]);
    const chain = make([primary.url, fallback.url], captureLogs().logger);
    const raw = await signedTransfer(0);
    const first = await chain.broadcast(raw);
    expect(first.acceptedBy).toEqual([primary.url, fallback.url]);
    const again = await chain.broadcast(raw);
    expect(again.hash).toBe(Transaction.from(raw).hash);
    expect(again.alreadyKnownBy).toEqual([primary.url, fallback.url]);
  });
});
