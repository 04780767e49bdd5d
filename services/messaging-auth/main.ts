import { runMessagingAuth } from "./run-messaging-auth";

/** The local messaging auth service (network `local` only); see run-messaging-auth.ts. */
void runMessagingAuth();
