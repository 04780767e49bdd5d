/** A valid config of three chains (1 for prices, 1337 and 1338 in one pool) that each test changes a part of. */
export const TM = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
export const TOKEN = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
export const MNEMONIC = "test test test test test test test test test test test junk";

export function validConfig(): Record<string, unknown> {
  return {
    adminToken: "a-long-enough-admin-token-for-tests",
    mnemonic: MNEMONIC,
    chainConfig: {
      "1": { providers: ["http://127.0.0.1:8545"] },
      "1337": { providers: ["http://127.0.0.1:18545"], transactionManagerAddress: TM },
      "1338": { providers: ["http://127.0.0.1:18546", "ws://127.0.0.1:18547"], transactionManagerAddress: TM },
    },
    swapPools: [
      {
        name: "TEST",
        assets: [
          { chainId: 1337, assetId: TOKEN },
          { chainId: 1338, assetId: TOKEN },
        ],
      },
    ],
  };
}
