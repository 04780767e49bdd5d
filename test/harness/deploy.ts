// Moved to scripts/local (npm run local deploys the same contracts); kept here for the tests' imports.
export * from "../../scripts/local/deploy-nxtp";
