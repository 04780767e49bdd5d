export * from "./names";
export * from "./jobs";
export * from "./connection";
export * from "./priority";
export * from "./ledger-jobs";
