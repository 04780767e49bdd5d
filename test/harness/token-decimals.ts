import { getBytes, hexlify } from "ethers";
import type { StackChain } from "./stack";

/** `decimals()`'s selector, as the dispatcher compares it: PUSH4 0x313ce567 EQ PUSH2 <dest> JUMPI. */
const DECIMALS_SELECTOR = "313ce567";
const PUSH1 = 0x60;
const PUSH32 = 0x7f;
const JUMPDEST = 0x5b;
const RETURN = 0xf3;
const JUMP = 0x56;

interface Op {
  readonly at: number;
  readonly op: number;
  readonly arg: string;
}

function disassemble(code: Uint8Array): Op[] {
  const ops: Op[] = [];
  for (let at = 0; at < code.length;) {
    const op = code[at];
    const size = op >= PUSH1 && op <= PUSH32 ? op - PUSH1 + 1 : 0;
    ops.push({ at, op, arg: Buffer.from(code.subarray(at + 1, at + 1 + size)).toString("hex") });
    at += 1 + size;
  }
  return ops;
}

/**
 * TestERC20's runtime code with `decimals()` answering `decimals` instead of 18. OpenZeppelin 4.2's
 * `decimals()` is `return 18;`, which solc 0.8.4 inlines in the selector's branch as one `PUSH1 0x12` before the
 * ABI encoding and the jump to the return: that byte is the only change. Throws unless the branch holds exactly
 * one `PUSH1 0x12` before its first jump, so a different compiler output is refused rather than mis-patched.
 */
export function withDecimals(runtimeCode: string, decimals: number): string {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > 0xff) throw new Error(`bad decimals ${decimals}`);
  const code = getBytes(runtimeCode);
  const ops = disassemble(code);
  const selector = ops.findIndex((o) => o.arg === DECIMALS_SELECTOR);
  if (selector < 0) throw new Error("no decimals() selector in the code");
  const dest = parseInt(ops[selector + 2]?.arg ?? "", 16);
  const start = ops.findIndex((o) => o.at === dest && o.op === JUMPDEST);
  if (start < 0) throw new Error("decimals() dispatch does not jump to a JUMPDEST");
  const branch: Op[] = [];
  for (const o of ops.slice(start + 1)) {
    if (o.op === JUMP || o.op === RETURN || o.op === JUMPDEST) break;
    branch.push(o);
  }
  const eighteen = branch.filter((o) => o.op === PUSH1 && o.arg === "12");
  if (eighteen.length !== 1) throw new Error(`decimals() branch holds ${eighteen.length} PUSH1 0x12, expected 1`);
  const patched = new Uint8Array(code);
  patched[eighteen[0].at + 1] = decimals;
  return hexlify(patched);
}

/** Gives the deployed TestERC20 at `token` a `decimals()` of `decimals` (anvil_setCode); balances and allowances stay. */
export async function setTokenDecimals(chain: StackChain, token: string, decimals: number): Promise<void> {
  const code = await chain.provider.getCode(token);
  await chain.anvil.rpc("anvil_setCode", [token, withDecimals(code, decimals)]);
}
