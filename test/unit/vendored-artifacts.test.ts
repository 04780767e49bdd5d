import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { getAddress } from "ethers";
import {
  VENDORED_ABIS,
  VENDORED_DEPLOYMENT_CONTRACTS,
  VENDORED_DIR,
  vendoredFiles,
} from "../../scripts/vendor-nxtp-artifacts";
import { packageArtifact, packageDeployments } from "../../scripts/nxtp-package";
import { loadAbi, VENDORED_ABI_NAMES } from "../../shared/chain/artifacts";
import { DEPLOYMENT_CONTRACT_NAMES, knownDeployments, type KnownDeployment } from "../../shared/config/deployments";

/** The vendored JSON under shared/chain/artifacts must stay what `npm run vendor:artifacts` makes of the package. */
const root = join(__dirname, "..", "..");
const vendoredDir = join(root, VENDORED_DIR);

describe("vendored @connext/nxtp-contracts files", () => {
  it("are byte-for-byte what the vendoring script produces from the installed package", () => {
    const expected = vendoredFiles();
    const onDisk = readdirSync(vendoredDir)
      .filter((f) => f.endsWith(".json"))
      .sort();
    expect(onDisk).toEqual([...expected.keys()].sort());
    for (const [file, text] of expected) {
      // A mismatch means the package changed or someone edited a vendored file: run `npm run vendor:artifacts`.
      expect({ file, text: readFileSync(join(vendoredDir, file), "utf8") }).toEqual({ file, text });
    }
  });

  it("vendor exactly the ABIs and deployment contracts the runtime reads", () => {
    expect([...VENDORED_ABIS]).toEqual([...VENDORED_ABI_NAMES]);
    expect([...VENDORED_DEPLOYMENT_CONTRACTS]).toEqual([...DEPLOYMENT_CONTRACT_NAMES]);
  });

  it.each(VENDORED_ABI_NAMES)("%s: the runtime ABI equals the package artifact's", (name) => {
    expect(loadAbi(name)).toEqual(packageArtifact(name).abi);
    expect(readFileSync(join(vendoredDir, `${name}.json`), "utf8")).not.toContain('"bytecode"');
  });

  it("knownDeployments() from the trimmed copy equals the first-deployment-wins reading of the full package file", () => {
    const full = packageDeployments() as Record<
      string,
      Record<string, { contracts?: Record<string, { address?: string }> }>
    >;
    const expected = new Map<number, KnownDeployment>();
    for (const [chainId, byName] of Object.entries(full)) {
      const contracts = Object.values(byName)[0]?.contracts ?? {};
      const at = (name: string): string | undefined =>
        contracts[name]?.address ? getAddress(contracts[name].address) : undefined;
      expected.set(Number(chainId), {
        transactionManagerAddress: at("TransactionManager"),
        priceOracleAddress: at("ConnextPriceOracle"),
        multicallAddress: at("Multicall"),
        routerFactoryAddress: at("RouterFactory"),
      });
    }
    const actual = knownDeployments();
    expect(actual.size).toBeGreaterThan(20);
    expect(actual).toEqual(expected);
    expect(actual.get(1)?.transactionManagerAddress).toBe("0x31eFc4AeAA7c39e54A33FDc3C46ee2Bd70ae0A09");
  });

  it("runtime code (services/, shared/) never loads the dev-only package or its reader", () => {
    const offenders: string[] = [];
    const loadsPackage =
      /(?:from\s+|require\(\s*|import\(\s*)["'](?:@connext\/nxtp-contracts|[./]*scripts\/nxtp-package)/;
    for (const dir of ["services", "shared"]) {
      for (const file of tsFiles(join(root, dir))) {
        if (loadsPackage.test(readFileSync(file, "utf8"))) {
          offenders.push(relative(root, file));
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      return tsFiles(path);
    }
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}
