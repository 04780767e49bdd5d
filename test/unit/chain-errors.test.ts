import { AbiCoder, makeError } from "ethers";
import { RouterError, isRetriable } from "../../shared/errors";
import {
  ChainRequestError,
  InsufficientFundsError,
  NonceTooLowError,
  ReplacementUnderpricedError,
  RpcUnavailableError,
  TransactionAlreadyKnownError,
  TransactionRevertedError,
  toChainError,
} from "../../shared/chain/errors";
import { REVERT_REASONS, findRevertCode } from "../../shared/chain/revert-codes";

/** `Error(string)` revert data, as a node returns it. */
function revertData(reason: string): string {
  return "0x08c379a0" + AbiCoder.defaultAbiCoder().encode(["string"], [reason]).slice(2);
}

/** The shape ethers v6 gives an estimateGas revert (captured from anvil). */
function estimateRevert(reason: string): Error {
  const data = revertData(reason);
  return makeError(`execution reverted: "${reason}"`, "CALL_EXCEPTION", {
    action: "estimateGas",
    data,
    reason,
    transaction: { to: null, data: "0x" },
    invocation: null,
    revert: { signature: "Error(string)", name: "Error", args: [reason] },
    info: { error: { code: 3, message: `execution reverted: ${reason}`, data } },
  });
}

/** ethers' wrapper for a JSON-RPC error it has no code for. */
function unknownRpcError(message: string, code = -32000): Error {
  return makeError("could not coalesce error", "UNKNOWN_ERROR", {
    error: { code, message },
    payload: { method: "eth_sendRawTransaction" },
  });
}

describe("toChainError", () => {
  it.each([
    ["#RL:008", "RL:008", "INSUFFICIENT_LIQUIDITY"],
    ["#RL:007", "RL:007", "ZERO_RECIPIENT"],
    ["#RL:002", "RL:002", "ZERO_AMOUNT"],
    ["#P:018", "P:018", "INSUFFICIENT_LIQUIDITY"],
    ["#RC_RL:040", "RC_RL:040", "INVALID_ROUTER_SIGNATURE"],
    ["#F:019", "F:019", "VARIANT_MISMATCH"],
  ])("decodes the revert %s into %s / %s, terminal", (text, revertCode, reason) => {
    const err = toChainError(estimateRevert(text));
    expect(err).toBeInstanceOf(TransactionRevertedError);
    expect(err).toMatchObject({ revertCode, reason, code: reason, retriable: false });
    expect(isRetriable(err)).toBe(false);
  });

  it("keeps an undecodable revert as TRANSACTION_REVERTED", () => {
    const err = toChainError(estimateRevert("ERC20: transfer amount exceeds balance"));
    expect(err).toBeInstanceOf(TransactionRevertedError);
    expect(err).toMatchObject({ code: "TRANSACTION_REVERTED", revertCode: undefined, retriable: false });
  });

  it("does not take a rate-limited estimateGas (CALL_EXCEPTION without revert data) for a revert", () => {
    const err = makeError("missing revert data", "CALL_EXCEPTION", {
      action: "estimateGas",
      data: null,
      reason: null,
      transaction: { to: null, data: "0x" },
      invocation: null,
      revert: null,
      info: { error: { code: 429, message: "Too Many Requests: rate limit exceeded" } },
    });
    expect(toChainError(err)).toBeInstanceOf(RpcUnavailableError);
  });

  it.each([
    ["nonce too low", NonceTooLowError],
    ["Nonce too low. Try incrementing the nonce.", NonceTooLowError],
    ["already known", TransactionAlreadyKnownError],
    ["transaction already imported", TransactionAlreadyKnownError],
    ["Transaction with the same hash was already imported.", TransactionAlreadyKnownError],
    ["replacement transaction underpriced", ReplacementUnderpricedError],
    ["insufficient funds for gas * price + value", InsufficientFundsError],
    ["header not found", RpcUnavailableError],
    ["something odd happened", ChainRequestError],
  ])("maps the node message %j", (message, expected) => {
    expect(toChainError(unknownRpcError(message))).toBeInstanceOf(expected);
  });

  it.each([
    ["NONCE_EXPIRED", NonceTooLowError],
    ["REPLACEMENT_UNDERPRICED", ReplacementUnderpricedError],
    ["INSUFFICIENT_FUNDS", InsufficientFundsError],
    ["TIMEOUT", RpcUnavailableError],
    ["SERVER_ERROR", RpcUnavailableError],
    ["NETWORK_ERROR", RpcUnavailableError],
  ] as const)("maps the ethers code %s", (code, expected) => {
    // Messages that match no node pattern, so the ethers code decides.
    const err = makeError("opaque", code as "TIMEOUT", {} as never);
    expect(toChainError(err)).toBeInstanceOf(expected);
  });

  it("maps socket errors (connection refused, reset) to RpcUnavailableError", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
    const reset = new Error("fetch failed", {
      cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
    });
    expect(toChainError(refused)).toBeInstanceOf(RpcUnavailableError);
    expect(toChainError(reset)).toBeInstanceOf(RpcUnavailableError);
  });

  it("classifies retriability as the submitter needs it", () => {
    expect(new RpcUnavailableError("x").retriable).toBe(true);
    expect(new NonceTooLowError("x").retriable).toBe(true);
    expect(new InsufficientFundsError("x").retriable).toBe(true);
    expect(new TransactionRevertedError("x").retriable).toBe(false);
  });

  it("passes RouterErrors through and never returns anything else", () => {
    const typed = new NonceTooLowError("x");
    expect(toChainError(typed)).toBe(typed);
    expect(toChainError("a string")).toBeInstanceOf(RouterError);
    expect(toChainError(undefined)).toBeInstanceOf(ChainRequestError);
  });
});

describe("revert code table", () => {
  it("finds the code inside revert text", () => {
    expect(findRevertCode('execution reverted: "#RL:008"')).toBe("RL:008");
    expect(findRevertCode("#RC_RL:040")).toBe("RC_RL:040");
    expect(findRevertCode("no code here")).toBeUndefined();
  });

  it("names every code of docs/protocol.md#revert-codes", () => {
    const codes = [
      "P:001",
      "P:009",
      "P:010",
      "P:026",
      "P:002",
      "P:003",
      "P:004",
      "P:011",
      "P:012",
      "P:013",
      "P:014",
      "P:015",
      "P:016",
      "P:039",
      "P:017",
      "P:018",
      "P:031",
      "F:019",
      "F:020",
      "F:021",
      "F:016",
      "F:022",
      "F:023",
      "F:024",
      "C:019",
      "C:021",
      "C:025",
      "C:022",
      "RL:002",
      "RL:007",
      "RL:008",
      "AL:001",
      "AL:002",
      "AL:003",
      "AL:004",
      "TA:005",
      "TA:006",
      "RC_P:040",
      "RC_F:040",
      "RC_C:040",
      "RC_RL:040",
    ];
    expect(codes.filter((c) => REVERT_REASONS[c] === undefined)).toEqual([]);
  });
});
