import { runService } from "../../shared/process/run-service";
import { startAdmin } from "./start-admin";

/** The admin API process (docs/admin-api.md): one per router; see start-admin.ts. */
void runService({ service: "admin", start: startAdmin });
