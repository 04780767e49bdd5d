import { RECEIVING, SENDING, startE2eStack, stopE2eStack, type E2eStack } from "../e2e/e2e-fixture";
import { useStack } from "../harness/stack";
import { startRpcProxy, type RpcProxy } from "../harness/rpc-proxy";
import { assertDistBuilt, startRouterProcs, type RouterProcs } from "./router-procs";
import { auditRouterTxs, describeAudit, fundUsers, runSwap } from "./swap-audit";

/**
 * The router's processes over two providers per chain. The primary goes down mid-run (its port
 * refuses) and the fallback carries the next swaps; a primary stuck behind a fresh fallback is skipped (no
 * stall, no decision on its stale head). Judged from the chains: swaps fulfilled, no reverted or duplicate
 * router transaction.
 */
const STEP_TIMEOUT_MS = 30_000;

describe("fault: providers", () => {
  beforeAll(assertDistBuilt);
  const s = useStack({ name: "fault-providers", start: startE2eStack, stop: stopE2eStack });

  const withProxies = async (
    e: E2eStack,
  ): Promise<{ proxies: Map<number, RpcProxy>; overrides: Record<number, Record<string, unknown>> }> => {
    const proxies = new Map<number, RpcProxy>();
    for (const chain of [e.sending, e.receiving]) proxies.set(chain.chainId, await startRpcProxy(chain.anvil.url));
    for (const proxy of proxies.values()) s.afterTest(() => proxy.down().catch(() => undefined));
    const overrides = Object.fromEntries(
      [e.sending, e.receiving].map((c) => [c.chainId, { providers: [proxies.get(c.chainId)?.url, c.anvil.url] }]),
    );
    return { proxies, overrides };
  };

  const expectClean = async (e: E2eStack, fromBlocks: number[], swaps: number, procs: RouterProcs): Promise<void> => {
    const audits = [
      await auditRouterTxs(e.sending, e.router, fromBlocks[0] + 1),
      await auditRouterTxs(e.receiving, e.router, fromBlocks[1] + 1),
    ];
    const figures = audits.map(describeAudit).join("\n");
    process.stdout.write(`${figures}\n`);
    expect({
      reverted: audits.flatMap((a) => a.reverted),
      duplicates: audits.flatMap((a) => a.duplicates),
      gaps: audits.flatMap((a) => a.nonceGaps),
    }).toEqual({ reverted: [], duplicates: [], gaps: [] });
    expect(audits[1].txs.filter((t) => t.method === "prepare").length).toBe(swaps);
    expect(audits[0].txs.filter((t) => t.method === "fulfill").length).toBe(swaps);
    // No process crashed over it (a crash would be restarted and hide the fault).
    expect([...procs.procs.values()].map((x) => `${x.name}:${x.restarts()}`)).toEqual(
      [...procs.procs.keys()].map((n) => `${n}:0`),
    );
  };

  it("the primary provider goes down mid-run: the fallback carries the next swaps", async () => {
    const [user] = await fundUsers(s, 1, 3);
    const { proxies, overrides } = await withProxies(s);
    const fromBlocks = [await s.sending.provider.getBlockNumber(), await s.receiving.provider.getBlockNumber()];
    const procs = s.stopAfterTest(await startRouterProcs(s, s.scratchDir, { chainOverrides: overrides }));
    const fail =
      (what: string) =>
      (err: unknown): never => {
        throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}\n${procs.outputs()}`);
      };
    await runSwap(user, STEP_TIMEOUT_MS).catch(fail("swap through the primary"));
    for (const id of [SENDING, RECEIVING]) expect(proxies.get(id)?.requests()).toBeGreaterThan(0);
    for (const proxy of proxies.values()) await proxy.down();
    await runSwap(user, STEP_TIMEOUT_MS).catch(fail("swap with the primary down"));
    await runSwap(user, STEP_TIMEOUT_MS).catch(fail("second swap with the primary down"));
    expect([...procs.procs.values()].map((x) => x.output()).join("\n")).toMatch(/provider unavailable, skipping it/);
    await expectClean(s, fromBlocks, 3, procs);
  }, 120_000);

  it("a primary provider stuck 20 blocks behind a fresh fallback is skipped: no stall, no wrong decision", async () => {
    const [user] = await fundUsers(s, 1, 3);
    const { proxies, overrides } = await withProxies(s);
    for (const proxy of proxies.values()) await proxy.lagBehind(20);
    const fromBlocks = [await s.sending.provider.getBlockNumber(), await s.receiving.provider.getBlockNumber()];
    const procs = s.stopAfterTest(await startRouterProcs(s, s.scratchDir, { chainOverrides: overrides }));
    for (let i = 0; i < 3; i += 1) {
      await runSwap(user, STEP_TIMEOUT_MS).catch((err: unknown) => {
        throw new Error(
          `swap ${i + 1} with a lagging primary: ${err instanceof Error ? err.message : String(err)}\n${procs.outputs()}`,
        );
      });
    }
    expect([...procs.procs.values()].map((x) => x.output()).join("\n")).toMatch(/provider lags behind, skipping it/);
    await expectClean(s, fromBlocks, 3, procs);
  }, 120_000);
});
