import type { TransferRecord } from "./types";

/** The block a fulfilled or cancelled record was completed in, when its source gave it; undefined otherwise. */
export function completionBlockOf(record: TransferRecord | undefined): number | undefined {
  switch (record?.status) {
    case "Fulfilled":
      return record.fulfillBlockNumber;
    case "Cancelled":
      return record.cancelBlockNumber;
    default:
      return undefined;
  }
}
