import type { RouterConfig } from "../../shared/config/types";
import type { RouterSigner } from "../../shared/signer/router-signer";
import type { SendContext } from "./send/send-context";

/** Everything a job needs, built once per process by startSubmitter (never per job). */
export interface SubmitterContext extends SendContext {
  readonly config: RouterConfig;
  readonly signer: RouterSigner;
}
