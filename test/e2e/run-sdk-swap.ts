import { spawn } from "node:child_process";
import { join, resolve } from "node:path";

/**
 * Runs test/sdk/swap-driver.js (the real @connext/nxtp-sdk@0.1.42 with its own node_modules and ethers v5) as
 * a child process and collects its step lines. Nothing of the SDK is imported here, so no ethers v5 type
 * reaches the TypeScript build.
 */
const SDK_DIR = resolve(__dirname, "../sdk");
const STDERR_TAIL_CHARS = 4096;

export interface SdkSwapParams {
  readonly mode: "user" | "relayed";
  readonly natsUrl: string;
  readonly authUrl: string;
  /** Skips the SDK's own sign-in at authUrl (the nats-server ignores the JWT). */
  readonly bearerToken?: string;
  readonly sendingChainId: number;
  readonly receivingChainId: number;
  readonly sendingAssetId: string;
  readonly receivingAssetId: string;
  /** Decimal string, sending-asset units. */
  readonly amount: string;
  readonly chains: Readonly<Record<number, { rpcUrl: string; transactionManager: string; subgraph: string }>>;
  readonly userPrivateKey: string;
  /** Relayed mode: what the user offers the relayer (decimal string); default the SDK's estimate. */
  readonly relayerFee?: string;
  readonly pollIntervalMs?: number;
  readonly auctionWaitTimeMs?: number;
  /** Bound of each driver step. */
  readonly stepTimeoutMs?: number;
  readonly logLevel?: string;
}

export interface SdkBid {
  readonly user: string;
  readonly router: string;
  readonly amount: string;
  readonly amountReceived: string;
  readonly transactionId: string;
  readonly sendingChainId: number;
  readonly receivingChainId: number;
  readonly [field: string]: unknown;
}

/** The driver's lines, by step (see swap-driver.js). */
export interface SdkSwapResult {
  /** `signedIn`: the SDK got its NATS token from authUrl (no bearerToken passed). */
  readonly connected: { signedIn: boolean; ms: number };
  readonly quote: { bid: SdkBid; bidSignature: string; gasFeeInReceivingToken: string; ms: number };
  readonly senderPrepared: { transactionId: string; transactionHash: string; blockNumber: number; ms: number };
  readonly receiverPrepared: {
    txData: { amount: string; router: string; transactionId: string };
    transactionHash: string;
    ms: number;
  };
  readonly fulfilled: { transactionHash: string; sender: string | null; relayerFee: string | null; ms: number };
  /** Refused non-loopback calls: "<layer> <target>" → count. */
  readonly blocked: Readonly<Record<string, number>>;
  /** How often the driver restarted the SDK's stopped subgraph loop (0 when no subgraph request failed). */
  readonly subgraphPollingRestarts: number;
  readonly totalMs: number;
}

type Line = Record<string, unknown> & { sdkDriver: string; ms: number };

/** Resolves with every step, or rejects with the driver's error line (or the timeout) and its stderr tail. */
export function runSdkSwap(
  params: SdkSwapParams,
  timeoutMs: number,
  onStep?: (step: string) => void,
): Promise<SdkSwapResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [join(SDK_DIR, "swap-driver.js")], {
      cwd: SDK_DIR,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", SDK_DRIVER_PARAMS: JSON.stringify(params) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines: Line[] = [];
    let stdoutRest = "";
    let stderrTail = "";
    /** The SDK's own pino lines (warn and above by default). */
    let sdkLogTail = "";
    child.stdout.on("data", (chunk: Buffer) => {
      const parts = (stdoutRest + chunk.toString("utf8")).split("\n");
      stdoutRest = parts.pop() ?? "";
      for (const text of parts) {
        const line = parseLine(text);
        if (line) {
          lines.push(line);
          onStep?.(line.sdkDriver);
        } else if (text.trim() !== "") sdkLogTail = (sdkLogTail + text + "\n").slice(-STDERR_TAIL_CHARS);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
    });
    const describe = (): string =>
      `steps seen: ${lines.map((l) => `${l.sdkDriver}@${l.ms}ms`).join(", ") || "none"}\n--- SDK log (tail) ---\n${sdkLogTail || "(empty)"}\n--- driver stderr (tail) ---\n${stderrTail || "(empty)"}`;
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`SDK swap driver (${params.mode}) did not finish within ${timeoutMs} ms; ${describe()}`));
    }, timeoutMs);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      const parsed = parseLine(stdoutRest);
      if (parsed) lines.push(parsed);
      const step = (name: string): Line | undefined => lines.find((l) => l.sdkDriver === name);
      const failure = step("error");
      const done = step("done");
      if (failure || code !== 0 || !done) {
        const why = failure
          ? `failed at ${String(failure.at)}: ${String(failure.message)} ${JSON.stringify({ type: failure.type, blocked: failure.blocked, subgraphPollingRestarts: failure.subgraphPollingRestarts })}`
          : `exited with ${String(code)}`;
        reject(new Error(`SDK swap driver (${params.mode}) ${why}; ${describe()}`));
        return;
      }
      resolvePromise({
        connected: step("connected") as unknown as SdkSwapResult["connected"],
        quote: step("quote") as unknown as SdkSwapResult["quote"],
        senderPrepared: step("sender-prepared") as unknown as SdkSwapResult["senderPrepared"],
        receiverPrepared: step("receiver-prepared") as unknown as SdkSwapResult["receiverPrepared"],
        fulfilled: step("fulfilled") as unknown as SdkSwapResult["fulfilled"],
        blocked: done.blocked as Record<string, number>,
        subgraphPollingRestarts: Number(done.subgraphPollingRestarts ?? 0),
        totalMs: done.ms,
      });
    });
  });
}

/** Driver lines carry `sdkDriver`; the SDK's own pino lines on the same stdout are skipped. */
function parseLine(text: string): Line | undefined {
  if (!text.startsWith("{")) return undefined;
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    return typeof value.sdkDriver === "string" ? (value as Line) : undefined;
  } catch {
    return undefined;
  }
}
