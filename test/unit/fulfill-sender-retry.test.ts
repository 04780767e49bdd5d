import {
  CLAIM_ALERT_BELOW_SEC,
  CLAIM_ERROR_BELOW_SEC,
  CLAIM_RETRY_FIRST_DELAY_MS,
  CLAIM_RETRY_MAX_DELAY_MS,
  claimFailureIsTerminal,
  claimKeepsTrying,
  claimLogLevel,
  claimRetryAtMs,
} from "../../shared/protocol/claim-retry";
import { RouterError } from "../../shared/errors";

class Coded extends RouterError {
  readonly retriable = false;
  constructor(readonly code: string) {
    super(code);
  }
}

/** The claim's retry policy (backoff, escalation, which failures end it). */
describe("claim retry policy", () => {
  it("doubles the park from 5 s up to 5 min, never past the expiry", () => {
    const now = 1_000_000;
    const far = now + 10 * 24 * 3600 * 1000;
    expect(claimRetryAtMs(now, 1, far) - now).toBe(CLAIM_RETRY_FIRST_DELAY_MS);
    expect(claimRetryAtMs(now, 2, far) - now).toBe(2 * CLAIM_RETRY_FIRST_DELAY_MS);
    expect(claimRetryAtMs(now, 7, far) - now).toBe(CLAIM_RETRY_MAX_DELAY_MS);
    expect(claimRetryAtMs(now, 500, far) - now).toBe(CLAIM_RETRY_MAX_DELAY_MS);
    expect(claimRetryAtMs(now, 7, now + 20_000)).toBe(now + 20_000);
  });

  it("logs warn, then error below 24 h, then alert below 6 h before the expiry", () => {
    expect(claimLogLevel(CLAIM_ERROR_BELOW_SEC + 1)).toBe("warn");
    expect(claimLogLevel(CLAIM_ERROR_BELOW_SEC - 1)).toBe("error");
    expect(claimLogLevel(CLAIM_ALERT_BELOW_SEC - 1)).toBe("alert");
    expect(claimLogLevel(-5)).toBe("alert");
  });

  it("keeps trying after reads, estimates and reverts; stops on what a new run cannot change", () => {
    for (const code of [
      "RPC_ERROR",
      "TRANSACTION_REVERTED",
      "SENDER_NOT_PREPARED",
      "NONCE_RETRIES_EXHAUSTED",
      "F:030",
    ]) {
      expect(claimKeepsTrying(new Coded(code))).toBe(true);
    }
    expect(claimKeepsTrying(new Error("plain"))).toBe(true);
    for (const code of ["SENDER_EXPIRED", "INVALID_USER_SIGNATURE", "TX_RECORD_CONFLICT"]) {
      expect(claimKeepsTrying(new Coded(code))).toBe(false);
    }
    expect(claimFailureIsTerminal("SENDER_EXPIRED: the sending side expired")).toBe(true);
    expect(claimFailureIsTerminal("TRANSACTION_REVERTED: reverted")).toBe(false);
    expect(claimFailureIsTerminal("job stalled more than allowable limit")).toBe(false);
    expect(claimFailureIsTerminal(undefined)).toBe(false);
  });
});
