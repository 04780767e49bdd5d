import { runService } from "../../shared/process/run-service";
import { startLedger } from "./start-ledger";

/** The ledger process (docs/accounting.md): one per router; see start-ledger.ts. */
void runService({ service: "ledger", start: startLedger });
