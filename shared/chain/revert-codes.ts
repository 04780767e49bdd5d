/**
 * NXTP v0 revert strings (`require(..., "#RL:008")`, docs/protocol.md#revert-codes, checked against the contract
 * sources of @connext/nxtp-contracts 0.1.42) → a stable reason name. The one table the router decodes reverts with.
 * Callers that branch on a revert compare its code (`revertCodeOf(err) === "P:018"`, the contract's own spelling,
 * which the docs cite); the name is the error's `code` and `reason` in logs, job records and API answers. Neither
 * is ever matched in the revert's text.
 */
export const REVERT_REASONS: Readonly<Record<string, string>> = {
  // prepare
  "P:001": "ZERO_ROUTER",
  "P:002": "ZERO_AMOUNT",
  "P:003": "ROUTER_NOT_APPROVED",
  "P:004": "ASSET_NOT_APPROVED",
  "P:009": "ZERO_USER",
  "P:010": "ZERO_FALLBACK",
  "P:011": "SAME_CHAIN",
  "P:012": "WRONG_CHAIN",
  "P:013": "EXPIRY_TOO_SOON",
  "P:014": "EXPIRY_TOO_LATE",
  "P:015": "ALREADY_PREPARED",
  "P:016": "NOT_ROUTER",
  "P:017": "NONZERO_VALUE",
  "P:018": "INSUFFICIENT_LIQUIDITY",
  "P:026": "ZERO_RECEIVING_ADDRESS",
  "P:031": "CALL_TO_NOT_CONTRACT",
  "P:039": "NOT_INITIATOR",
  // fulfill
  "F:016": "NOT_ROUTER",
  "F:019": "VARIANT_MISMATCH",
  "F:020": "EXPIRED",
  "F:021": "NOT_PREPARED",
  "F:022": "INVALID_USER_SIGNATURE",
  "F:023": "RELAYER_FEE_ABOVE_AMOUNT",
  "F:024": "CALLDATA_HASH_MISMATCH",
  // cancel
  "C:019": "VARIANT_MISMATCH",
  "C:021": "NOT_PREPARED",
  "C:022": "INVALID_USER_SIGNATURE",
  "C:025": "NOT_ROUTER",
  // removeLiquidity: RL:008 is "router balance below amount"; RL:007 is a zero recipient.
  "RL:002": "ZERO_AMOUNT",
  "RL:007": "ZERO_RECIPIENT",
  "RL:008": "INSUFFICIENT_LIQUIDITY",
  // addLiquidity and asset transfers
  "AL:001": "ZERO_ROUTER",
  "AL:002": "ZERO_AMOUNT",
  "AL:003": "ROUTER_NOT_APPROVED",
  "AL:004": "ASSET_NOT_APPROVED",
  "TA:005": "VALUE_MISMATCH",
  "TA:006": "NONZERO_VALUE",
  // Router.sol (router-contract mode): the router-signer signature did not recover to routerSigner.
  "RC_P:040": "INVALID_ROUTER_SIGNATURE",
  "RC_F:040": "INVALID_ROUTER_SIGNATURE",
  "RC_C:040": "INVALID_ROUTER_SIGNATURE",
  "RC_RL:040": "INVALID_ROUTER_SIGNATURE",
};

const REVERT_CODE = /#([A-Z][A-Z_]*:[0-9]{3})\b/;

/** The NXTP code inside a revert string or error message (`#RL:008` → `RL:008`), if there is one. */
export function findRevertCode(text: string): string | undefined {
  return REVERT_CODE.exec(text)?.[1];
}

export function revertReason(code: string): string | undefined {
  return REVERT_REASONS[code];
}
