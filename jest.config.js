/** Unit tests use no services; integration and chain tests start their own redis-server, nats-server and anvil. */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  transform: { "^.+\\.ts$": ["ts-jest", { tsconfig: "tsconfig.json" }] },
  testTimeout: 60000,
  restoreMocks: true,
  maxWorkers: 2,
  reporters: ["default", "<rootDir>/test/summary-reporter.js"],
  // Deletes the multi-host test bed's network namespaces even after a failed run (test/multihost).
  globalTeardown: "<rootDir>/test/multihost/global-teardown.js",
};
