/** Unit tests use no services; integration and chain tests start their own redis-server, nats-server and anvil. */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  // test/guard measures throughput, so it runs alone after the suite (npm run test:guard): beside the suite's other
  // workers a healthy submitter measured 19.5 tx/s against the guard's 20, alone 74-80.
  testPathIgnorePatterns: ["/node_modules/", "<rootDir>/test/guard/"],
  transform: { "^.+\\.ts$": ["ts-jest", { tsconfig: "tsconfig.json" }] },
  testTimeout: 60000,
  restoreMocks: true,
  maxWorkers: 2,
  reporters: ["default", "<rootDir>/test/summary-reporter.js"],
  // Deletes the multi-host test bed's network namespaces even after a failed run (test/multihost).
  globalTeardown: "<rootDir>/test/multihost/global-teardown.js",
};
