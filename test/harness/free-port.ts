// Moved to scripts/local (npm run local uses it too); kept here for the tests' imports.
export { getFreePort } from "../../scripts/local/free-port";
