import { parseEther, ZeroAddress } from "ethers";
import { createChainProvider } from "../../shared/chain/chain-provider";
import { createLogger } from "../../shared/logging/create-logger";
import { pollUntil } from "../../shared/timing";
import { reconcileChain, type ReconcilerDeps } from "../../services/ledger/reconciler";
import { startLedger } from "../../services/ledger/start-ledger";
import { startRpcProxy, type RpcProxy } from "../harness/rpc-proxy";
import { RECEIVING, useLedgerSwapSuite } from "../integration/ledger-swap-fixture";

const logger = createLogger({ level: "silent", service: "ledger" });

/**
 * A lagging RPC during reconciliation: the ledger has booked transactions above the head the reconciling node
 * knows. Reading "latest" state there would show the books ahead of the chain (false drift); the reconciler
 * reads both ends at the node's confirmed head, and the books over that same range only.
 */
describe("adversarial: a lagging RPC during reconciliation", () => {
  const suite = useLedgerSwapSuite("ledger_reconcile_lag", { reconcileIntervalMs: 86_400_000 });
  let proxy: RpcProxy | undefined;
  afterAll(async () => {
    await proxy?.down();
  });

  it("reports no false drift for transactions booked above the lagging node's head, and checks them once it catches up", async () => {
    proxy = await startRpcProxy(suite.s.receiving.anvil.url);
    const lagging = createChainProvider({ chainId: RECEIVING, urls: [proxy.url], logger });
    const deps: ReconcilerDeps = {
      config: suite.config,
      pool: suite.pool,
      providerFor: (chainId) => (chainId === RECEIVING ? lagging : suite.providerFor(chainId)),
      signer: suite.signer,
      routerAddress: suite.signer,
      logger,
    };
    const ledger = await startLedger({ config: suite.config, logger, env: {} });
    try {
      expect((await reconcileChain(deps, RECEIVING)).kind).toBe("baseline");
      const [added, removed] = await suite.liquidityOps();
      for (const tx of [added, removed]) await suite.name(tx);
      for (const tx of [added, removed]) await suite.waitDone(tx);
      const booked = await suite.pool.query<{ block: string }>(
        "SELECT max(block_number) AS block FROM ledger_events WHERE chain_id = $1",
        [RECEIVING],
      );
      const removedBlock = Number(booked.rows[0].block);

      // The node stops one block short: it has not seen the removal the books already hold.
      await proxy.lagBehind(1, { hideNewer: true });
      await pollUntil(
        "the provider sees the lagging head",
        async () => (await lagging.getBlockNumber()) === removedBlock - 1,
      );
      const behind = await reconcileChain(deps, RECEIVING);
      if (behind.kind !== "checked") throw new Error(`expected a checked range, got ${behind.kind}`);
      expect(behind.toBlock).toBe(removedBlock - 1);
      expect(behind.lines.filter((l) => l.flagged)).toEqual([]);
      expect(behind.lines.find((l) => l.subject === "router-balance" && l.assetId === ZeroAddress)?.actual).toBe(
        parseEther("2"),
      );

      // Caught up: the next range holds the removal, and agrees too.
      proxy.catchUp();
      await pollUntil("the provider sees the head again", async () => (await lagging.getBlockNumber()) >= removedBlock);
      const after = await reconcileChain(deps, RECEIVING);
      if (after.kind !== "checked") throw new Error(`expected a checked range, got ${after.kind}`);
      expect(after.fromBlock).toBe(removedBlock - 1);
      expect(after.lines.filter((l) => l.flagged)).toEqual([]);
      expect(after.lines.find((l) => l.subject === "router-balance" && l.assetId === ZeroAddress)?.actual).toBe(
        -parseEther("0.5"),
      );
    } finally {
      await ledger.stop();
      lagging.destroy();
    }
  });
});
