import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Wallet } from "ethers";
import { startSubmitter, type RunningSubmitter } from "../../services/submitter/start-submitter";
import { isTxJobProgress } from "../../shared/queues";
import { liveChildPids } from "../harness/child-process";
import {
  startSubmitterStack,
  submitterConfig,
  tokenBalance,
  txQueueClient,
  type SubmitterStack,
  type TxQueueClient,
} from "./submitter-fixture";
import { waitFor } from "../harness/wait";
import { captureLogs } from "../harness/logs";
import { uniquePrefix } from "../harness/prefix";

interface HidingProxy {
  readonly url: string;
  /** Receipts of these hashes are answered `null`, as by a provider whose receipt index lags. */
  readonly hidden: Set<string>;
  close(): Promise<void>;
}

/** A JSON-RPC proxy in front of anvil that forwards everything but hides chosen receipts. */
async function startHidingProxy(target: string): Promise<HidingProxy> {
  const hidden = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const upstream = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body });
        const parsed = JSON.parse(body) as
          | { id: unknown; method: string; params?: unknown[] }
          | Array<{ id: unknown; method: string; params?: unknown[] }>;
        const answer = (await upstream.json()) as
          { id: unknown; result?: unknown } | Array<{ id: unknown; result?: unknown }>;
        const requests = Array.isArray(parsed) ? parsed : [parsed];
        const answers = Array.isArray(answer) ? answer : [answer];
        for (const request of requests) {
          const hash = String(request.params?.[0] ?? "").toLowerCase();
          if (request.method === "eth_getTransactionReceipt" && hidden.has(hash)) {
            const found = answers.find((a) => a.id === request.id);
            if (found) found.result = null;
          }
        }
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(Array.isArray(answer) ? answers : answers[0]));
      })().catch(() => {
        res.statusCode = 502;
        res.end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hidden,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A provider that misreports a remove-liquidity's nonce as taken by someone else (the count
 * says used, our receipt is missing) used to make the submitter rebuild at a new nonce and withdraw twice. The
 * rebuild now needs proof: a receipt of one of the job's hashes anywhere settles it as mined; otherwise two
 * providers must agree, or nothing is rebuilt.
 */
describe("a nonce reported taken is proven before a remove-liquidity is rebuilt", () => {
  let s: SubmitterStack;
  let proxy: HidingProxy;
  let client: TxQueueClient | undefined;
  let submitter: RunningSubmitter | undefined;

  beforeAll(async () => {
    s = await startSubmitterStack();
  });

  beforeEach(async () => {
    proxy = await startHidingProxy(s.chain.anvil.url);
  });

  afterEach(async () => {
    await submitter?.stop();
    submitter = undefined;
    await client?.close();
    client = undefined;
    await proxy.close();
    await s.chain.anvil.setAutomine(true);
  });

  afterAll(async () => {
    await s?.stack.stop();
    expect(liveChildPids()).toEqual([]);
  });

  const run = async (providers: string[]) => {
    const prefix = uniquePrefix();
    client = await txQueueClient(s.redisUrl, prefix);
    const logs = captureLogs();
    const { config } = submitterConfig(s, prefix, { providers });
    submitter = await startSubmitter({
      config,
      logger: logs.logger,
      chainId: s.chain.chainId,
      // Shortened polls: the cases wait on many mined receipts; the real-SDK swaps run at the defaults.
      options: { pollIntervalMs: 50, providerOptions: { headRefreshMs: 200 } },
    });
    await s.chain.anvil.setAutomine(false);
    const recipient = Wallet.createRandom().address;
    const job = await client.addRemoveLiquidity({
      assetId: s.chain.deployment.token,
      amount: "37",
      recipientAddress: recipient,
    });
    const sent = await waitFor("the broadcast", async () => client?.progress.get(job.id ?? "")?.find(isTxJobProgress));
    // Our transaction is mined, but the (first) provider does not show its receipt: the nonce looks taken.
    proxy.hidden.add(sent.transactionHash.toLowerCase());
    await s.chain.anvil.mine(1);
    await s.chain.anvil.setAutomine(true);
    return { job, sent, recipient, logs };
  };

  it("one provider misreporting: nothing is rebuilt, an alert names the hash, and the job completes once the receipt shows", async () => {
    const { job, sent, recipient, logs } = await run([proxy.url]);
    await waitFor("the unconfirmed-nonce alert", async () =>
      logs.lines().find((l) => l.alert === true && l.at === "submitter.send" && /not proven/.test(String(l.message))),
    );
    // The job's outcome line follows the alert once the processor has decided: parked, no attempt spent.
    await waitFor("the job's delayed outcome", async () =>
      logs
        .lines()
        .find((l) => l.at === "submitter.job" && l.outcome === "delayed" && l.code === "NONCE_TAKEN_UNCONFIRMED"),
    );
    expect(await tokenBalance(s, recipient)).toBe(37n);

    proxy.hidden.clear();
    const result = await job.waitUntilFinished(
      client?.events ?? (await Promise.reject(new Error("no client"))),
      30_000,
    );
    expect(result.transactionHash).toBe(sent.transactionHash);
    expect(await tokenBalance(s, recipient)).toBe(37n);
    expect(
      logs.lines().filter((l) => /sending a new one|rebuilding at the next nonce/.test(String(l.message))),
    ).toEqual([]);
  }, 60_000);

  it("another provider has the job's receipt: it counts as mined, nothing is rebuilt", async () => {
    const { job, sent, recipient, logs } = await run([proxy.url, s.chain.anvil.url]);
    await waitFor("the own-receipt warning", async () =>
      logs.lines().find((l) => l.at === "submitter.send" && /own receipt: it is mined/.test(String(l.message))),
    );
    proxy.hidden.clear();
    const result = await job.waitUntilFinished(
      client?.events ?? (await Promise.reject(new Error("no client"))),
      30_000,
    );
    expect(result.transactionHash).toBe(sent.transactionHash);
    expect(await tokenBalance(s, recipient)).toBe(37n);
    expect(
      logs.lines().filter((l) => /sending a new one|rebuilding at the next nonce/.test(String(l.message))),
    ).toEqual([]);
  }, 60_000);
});
