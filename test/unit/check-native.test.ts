import { nativeReport } from "../../scripts/check-native";

/**
 * README, "Install footprint": on the platform the project builds and ships for (linux-x64, the Docker image's),
 * the native builds of keccak, secp256k1 and msgpackr-extract load from their prebuilt binaries.
 */
describe("npm run check-native", () => {
  it("loads every native build on linux-x64", () => {
    const report = nativeReport();
    if (`${process.platform}-${process.arch}` !== "linux-x64") {
      expect(["native", "ethers"]).toContain(report.keccak); // elsewhere: whichever loads, reported
      return;
    }
    expect(report).toEqual({ keccak: "native", secp256k1: "native", msgpackrExtract: true });
  });
});
