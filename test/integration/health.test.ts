import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ManagedProcess } from "../harness/child-process";
import { getFreePort } from "../harness/free-port";
import {
  OPS_ADMIN_TOKEN,
  getText,
  spawnService,
  startRedisOn,
  writeOpsConfig,
  type ServiceProcess,
} from "./metrics-fixture";
import { waitFor } from "../harness/wait";
import { uniquePrefix } from "../harness/prefix";
import { basicAuth } from "../harness/basic-auth";
import { sampleValue } from "../harness/prometheus";

/**
 * The admin process as PM2 runs it (dist/, IPC channel): /healthz, /readyz and /metrics on its metrics port,
 * PM2's "ready" only once /readyz passes, its heartbeat in GET /status, and /readyz following Redis down and up.
 */
describe("health endpoints of a router process", () => {
  let dir: string;
  let redisPort: number;
  let redis: ManagedProcess | undefined;
  let admin: ServiceProcess;
  let metricsUrl: string;
  let adminUrl: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "health-"));
    redisPort = await getFreePort();
    redis = await startRedisOn(redisPort);
    const port = await getFreePort();
    const metricsPort = await getFreePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}`; // admin: slot 0, instance 0
    adminUrl = `http://127.0.0.1:${port}`;
    const configPath = join(dir, "config.json");
    writeOpsConfig(configPath, {
      redisUrl: `redis://127.0.0.1:${redisPort}`,
      prefix: uniquePrefix(),
      port,
      metricsPort,
    });
    admin = spawnService("services/admin/main.js", configPath);
  }, 30_000);

  afterAll(async () => {
    await admin?.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is alive and ready, and tells PM2 ready only after /readyz passed", async () => {
    await waitFor("ready message", async () => (admin.messages().includes("ready") ? true : undefined), 20_000);
    expect((await getText(`${metricsUrl}/healthz`)).status).toBe(200);
    const ready = await getText(`${metricsUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toMatchObject({
      ready: true,
      checks: expect.arrayContaining([{ name: "redis", ok: true }]),
    });
  });

  it("serves Prometheus text with default metrics and role labels", async () => {
    const metrics = await getText(`${metricsUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toContain("text/plain");
    expect(metrics.text).toMatch(/^process_cpu_user_seconds_total\{role="admin",pm2_instance="0"\} /m);
    // The admin exports every heartbeat, its own included.
    expect(sampleValue(metrics.text, "router_process_up", { process: "admin-0" })).toBe(1);
  });

  it("GET /status requires the token and lists the live process and each chain", async () => {
    expect((await getText(`${adminUrl}/status`)).status).toBe(401);
    expect((await getText(`${adminUrl}/status`, basicAuth("wrong-token"))).status).toBe(401);
    const res = await getText(`${adminUrl}/status`, { authorization: `Bearer ${OPS_ADMIN_TOKEN}` });
    expect(res.status).toBe(200);
    const status = JSON.parse(res.text) as {
      processes: Array<{ processId: string; alive: boolean }>;
      chains: Array<{ chainId: number; queue: Record<string, number> }>;
      modes: Record<string, unknown>;
    };
    expect(status.processes).toEqual(
      expect.arrayContaining([expect.objectContaining({ processId: "admin-0", alive: true })]),
    );
    expect(status.chains.map((c) => c.chainId)).toEqual([1, 1337]);
    expect(status.chains[1].queue).toMatchObject({ waiting: 0, failed: 0 });
    expect(status.modes).toMatchObject({ cleanUpMode: false, dashboardActions: false });
    expect(res.text).not.toContain(OPS_ADMIN_TOKEN);
  });

  it("turns not ready when Redis stops, stays alive, and is ready again once Redis is back", async () => {
    await redis?.stop();
    redis = undefined;
    const notReady = await waitFor("503 from /readyz", async () => {
      const res = await getText(`${metricsUrl}/readyz`);
      return res.status === 503 ? res : undefined;
    });
    expect(JSON.parse(notReady.text)).toMatchObject({
      ready: false,
      checks: expect.arrayContaining([expect.objectContaining({ name: "redis", ok: false })]),
    });
    expect((await getText(`${metricsUrl}/healthz`)).status).toBe(200);
    // GET /status needs Redis: a 503 with a code, not a hang.
    expect((await getText(`${adminUrl}/status`, basicAuth(OPS_ADMIN_TOKEN))).status).toBe(503);

    redis = await startRedisOn(redisPort);
    await waitFor(
      "200 from /readyz",
      async () => ((await getText(`${metricsUrl}/readyz`)).status === 200 ? true : undefined),
      30_000,
    );
    expect(admin.child.exitCode).toBeNull();
  }, 60_000);
});
