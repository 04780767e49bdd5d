import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isAlive, stopPid, tailFile } from "../../scripts/local/detached";
import { LocalServiceError, StepFailedError } from "../../scripts/local/errors";
import { localPaths, type LocalPaths } from "../../scripts/local/paths";
import { redisAnswers } from "../../scripts/local/probes";
import { redisSpec, startServer } from "../../scripts/local/servers";
import { emptyState, readState, writeState, type LocalProcess } from "../../scripts/local/state";
import { createSteps } from "../../scripts/local/steps";
import { stopLocalStack } from "../../scripts/local/stop-stack";

/**
 * The pieces of `npm run local` / `local:stop` that decide what runs and what gets signalled: servers started
 * detached (they must outlive the starter), readiness failures that carry the log, and a stop that signals
 * exactly the recorded processes, never a pid that now runs another program.
 */
const sessionOf = (pid: number): string => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3];
};

describe("npm run local: detached servers and stopping by pid", () => {
  let paths: LocalPaths;
  const started: LocalProcess[] = [];
  let bystander: ChildProcess | undefined;

  beforeAll(() => {
    paths = localPaths(mkdtempSync(join(tmpdir(), "local-stack-")));
    mkdirSync(paths.logDir, { recursive: true });
  });

  afterAll(async () => {
    bystander?.kill("SIGKILL");
    for (const proc of started) await stopPid(proc.pid, 1_000).catch(() => undefined);
    rmSync(paths.root, { recursive: true, force: true });
  });

  it("starts redis-server in a session of its own, ready and recorded, and stops only the recorded program", async () => {
    const redis = await startServer(
      paths,
      redisSpec(() => undefined),
      (p) => started.push(p),
      () => undefined,
    );
    expect(started.map((p) => p.pid)).toEqual([redis.pid]);
    expect(await redisAnswers(redis.port as number, 1_000)).toBe(true);
    // detached: a new session, so a terminal hang-up or the starter's exit does not take it down.
    expect(sessionOf(redis.pid)).not.toBe(sessionOf(process.pid));

    // A recorded pid that now runs another program (pid reuse) must be left alone.
    bystander = spawn("sleep", ["60"], { stdio: "ignore" });
    const foreign: LocalProcess = {
      name: "anvil-1",
      pid: bystander.pid as number,
      command: redis.command,
      logFile: redis.logFile,
    };
    writeState(paths.stateFile, { ...emptyState(process.pid, Date.now()), processes: [redis, foreign] });
    expect(readState(paths.stateFile)?.processes).toHaveLength(2);

    const lines: string[] = [];
    const report = await stopLocalStack(paths, readState(paths.stateFile), (l) => lines.push(l));
    expect(report).toEqual({ stopped: ["redis-server"], alreadyGone: ["anvil-1"] });
    expect(isAlive(redis.pid)).toBe(false);
    expect(isAlive(bystander.pid as number)).toBe(true);
    expect(existsSync(paths.stateFile)).toBe(false);
    expect(lines.join("\n")).toContain(`stopped redis-server (pid ${redis.pid})`);
  });

  it("reports a server that exits before it is ready with its log file, and leaves nothing running", async () => {
    const recorded: LocalProcess[] = [];
    const forgotten: number[] = [];
    const failing = startServer(
      paths,
      {
        name: "broken",
        command: "/bin/sh",
        args: () => ["-c", "echo cannot bind: boom >&2; exit 3"],
        probe: async () => false,
      },
      (p) => recorded.push(p),
      (pid) => forgotten.push(pid),
    );
    await expect(failing).rejects.toThrow(LocalServiceError);
    await expect(failing).rejects.toThrow(/broken \(pid \d+\) exited before it was ready/);
    expect(forgotten).toEqual(recorded.map((p) => p.pid));
    expect(tailFile(join(paths.logDir, "broken.log"), 5)).toContain("cannot bind: boom");
  });

  it("names the failed step and the log files of the process at fault", async () => {
    const out: string[] = [];
    const steps = createSteps((l) => out.push(l));
    const failure = steps.run("Starting the thing", async () => {
      throw new LocalServiceError("thing exited", ["/tmp/thing.log"]);
    });
    await expect(failure).rejects.toBeInstanceOf(StepFailedError);
    await expect(failure).rejects.toMatchObject({
      step: "Starting the thing",
      logFiles: ["/tmp/thing.log"],
      message: "Starting the thing failed: thing exited",
    });
    expect(out).toEqual([expect.stringMatching(/^\[\s+0\.\ds\] ▶ Starting the thing$/)]);
    await expect(steps.run("Second", async () => 7)).resolves.toBe(7);
    expect(out[out.length - 1]).toMatch(/✓ Second \(0\.\d s\)$/);
  });
});
