import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseEther } from "ethers";
import { cleanUpModeKey } from "../../shared/coordination/keys";
import { createBidReservations, type ReserveCode } from "../../shared/transfers/bid-reservations";
import { waitFor } from "../harness/wait";
import {
  ADMIN_TOKEN,
  RECEIVING,
  SENDING,
  routerConfigJson,
  startE2eStack,
  startRouter,
  stopE2eStack,
  type E2eStack,
  type Router,
} from "./e2e-fixture";
import { transferEvents, userFulfill, userPrepare, waitForEvent } from "./e2e-user";

const DRAIN = resolve(__dirname, "../../dist/scripts/drain.js");

interface DrainRun {
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly exit: Promise<number | null>;
}

/** `npm run drain [args]` as an operator runs it, against the router's config file. */
function runDrain(configFile: string, args: readonly string[] = []): DrainRun {
  const child = spawn(process.execPath, [DRAIN, ...args], {
    env: { PATH: process.env.PATH, ROUTER_CONFIG_FILE: configFile },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => lines.push(...chunk.split("\n").filter((l) => l !== "")));
  }
  const exit = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  return { child, lines, exit };
}

/**
 * `npm run drain` (docs/operating.md#drain-and-upgrade) against pollers, submitters and the admin API live on
 * redis + anvil: it switches clean-up mode on, so the auction's reservation step refuses a new request, and returns
 * only once GET /status says drained, which is after the swap in flight was claimed by the router.
 */
describe("e2e: npm run drain", () => {
  let s: E2eStack;
  let r: Router | undefined;
  const drains: DrainRun[] = [];

  beforeAll(async () => {
    s = await startE2eStack();
  }, 120_000);

  afterAll(async () => {
    for (const d of drains) d.child.kill();
    await r?.stop();
    await stopE2eStack(s);
  });

  it("waits for the swap in flight, refuses new bids meanwhile, and returns once /status says drained", async () => {
    r = await startRouter(s);
    const router = r;
    const port = Number(new URL(router.adminUrl ?? "").port);
    const configFile = join(s.dir, `${router.prefix}-drain.json`);
    writeFileSync(configFile, JSON.stringify(routerConfigJson(s, router.prefix, { port })));
    const reservations = createBidReservations(router.redis, router.prefix);
    // An auction's atomic step for a new request, as a dry run (nothing reserved, no rate stamp).
    const newAuction = async (): Promise<ReserveCode> =>
      (
        await reservations.reserve({
          sendingChainId: SENDING,
          sendingAssetId: s.sending.deployment.token,
          receivingChainId: RECEIVING,
          receivingAssetId: s.receiving.deployment.token,
          transferKey: `0x${"ab".repeat(32)}:0x${"cd".repeat(20)}`,
          amount: parseEther("1"),
          nowMs: Date.now(),
          untilMs: Date.now() + 600_000,
          maxAgeMs: 60_000,
          rateLimitMs: 0,
          minGasSending: 0n,
          minGasReceiving: 0n,
          commit: false,
        })
      ).code;
    // Before the drain the same request would get a bid (once the pollers stored fresh balances).
    await waitFor("a bid before the drain", async () => ((await newAuction()) === "ok" ? true : undefined));

    const t = await userPrepare(s);
    const prepared = await waitForEvent(s.receiving, "prepared", t.transactionId, 60_000);

    const drain = runDrain(configFile);
    drains.push(drain);
    await waitFor("drain reports the open transfer", async () =>
      drain.lines.some((l) => / waiting: .*1337: 1 open transfer/.test(l)) ? true : undefined,
    );
    expect(await router.redis.exists(cleanUpModeKey(router.prefix))).toBe(1);
    expect(await newAuction()).toBe("RouterInCleanUpMode");
    expect(drain.child.exitCode).toBeNull();

    await userFulfill(s, prepared.txData);
    expect(await drain.exit).toBe(0);
    // drain returned: the router's claim on the sending chain was already mined, and /status agrees.
    expect(await transferEvents(s.sending, "fulfilled", t.transactionId)).toHaveLength(1);
    const status = (await (
      await fetch(`${router.adminUrl}/status`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).json()) as { drained: boolean; modes: { cleanUpMode: boolean } };
    expect(status).toMatchObject({ drained: true, modes: { cleanUpMode: true } });
    expect(drain.lines.some((l) => l.includes(" drained: no open transfer"))).toBe(true);

    const off = runDrain(configFile, ["--off"]);
    drains.push(off);
    expect(await off.exit).toBe(0);
    expect(await newAuction()).toBe("ok");
  }, 240_000);
});
