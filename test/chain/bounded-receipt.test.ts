import { Wallet, parseEther, type Contract, type JsonRpcProvider } from "ethers";
import { TransactionRevertedError } from "../../shared/chain/errors";
import { ReceiptTimeoutError } from "../../scripts/local/errors";
import { waitForReceipt } from "../../scripts/local/receipts";
import { anvilProvider, anvilWallet, startAnvil, type Anvil } from "../harness/anvil";
import { liveChildPids } from "../harness/child-process";
import { deployContract, sendTx } from "../harness/deploy";

/**
 * The stack's receipt wait (scripts/local/receipts.ts) on a real anvil: a transaction that is never mined fails the
 * wait at its bound with an error naming it, the same wait returns once the block comes, and a mined revert names
 * the method.
 */
const CHAIN_ID = 31337;

describe("bounded receipt wait (anvil)", () => {
  let anvil: Anvil;
  let provider: JsonRpcProvider;
  let token: Contract;

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: CHAIN_ID });
    provider = anvilProvider(anvil.url, CHAIN_ID);
    token = await deployContract("TestERC20", anvilWallet(0, provider));
  });

  afterEach(async () => {
    await anvil.setAutomine(true);
  });

  afterAll(async () => {
    provider?.destroy();
    await anvil?.stop();
    expect(liveChildPids()).toEqual([]);
  });

  it("a transaction left in the mempool: the wait throws ReceiptTimeoutError naming it at its bound, then returns once mined", async () => {
    await anvil.setAutomine(false);
    const to = Wallet.createRandom().address;
    const tx = await token.getFunction("mint").send(to, parseEther("1"));
    const wait = { provider, hash: tx.hash, what: "mint", chainId: CHAIN_ID };

    const startedAtMs = Date.now();
    const missed = await waitForReceipt({ ...wait, timeoutMs: 400 }).catch((err: unknown) => err);
    const elapsedMs = Date.now() - startedAtMs;
    expect(missed).toBeInstanceOf(ReceiptTimeoutError);
    // The parenthesis says what the last read saw: no receipt, or (on a loaded machine) a read the deadline cut.
    expect((missed as Error).message).toMatch(
      new RegExp(`^mint: transaction ${tx.hash} on chain ${CHAIN_ID} has no receipt after 400 ms \\(`),
    );
    expect(elapsedMs).toBeGreaterThanOrEqual(400);
    expect(elapsedMs).toBeLessThan(3_000);

    const waiting = waitForReceipt({ ...wait, timeoutMs: 10_000 });
    await anvil.mine(1);
    const receipt = await waiting;
    expect(receipt.hash).toBe(tx.hash);
    expect(receipt.status).toBe(1);
    expect(await token.getFunction("balanceOf").staticCall(to)).toBe(parseEther("1"));
  });

  it("a mined revert (status 0) surfaces as TransactionRevertedError naming the method", async () => {
    const poor = Wallet.createRandom().connect(provider);
    await anvil.setBalance(poor.address, parseEther("1"));
    // A fixed gas limit skips estimation, so the revert is mined instead of refused before sending.
    const asPoor = token.connect(poor) as Contract;
    const reverted = await sendTx(asPoor, "transfer", [Wallet.createRandom().address, 1n], {
      gasLimit: 100_000n,
    }).catch((err: unknown) => err);
    expect(reverted).toBeInstanceOf(TransactionRevertedError);
    expect((reverted as Error).message).toMatch(
      new RegExp(`^transfer: transaction 0x[0-9a-f]{64} on chain ${CHAIN_ID} reverted \\(block \\d+\\)$`),
    );
  });
});
