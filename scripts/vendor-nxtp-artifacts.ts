/**
 * `npm run vendor:artifacts`: regenerates shared/chain/artifacts/*.json from the installed
 * `@connext/nxtp-contracts` (a dev dependency): the ABIs the router calls and the package's deployments.json
 * trimmed to the addresses the config reads. Output is deterministic (fixed key order, 2-space JSON, final
 * newline), so test/unit/vendored-artifacts.test.ts compares bytes. Self-contained: it must run even when
 * the vendored files are missing, so it imports nothing that loads them.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  NXTP_CONTRACTS_PACKAGE,
  packageArtifact,
  packageDeployments,
  packageVersion,
  type NxtpContractName,
} from "./nxtp-package";

/** Must equal VENDORED_ABI_NAMES in shared/chain/artifacts.ts (the test checks). */
export const VENDORED_ABIS: readonly NxtpContractName[] = [
  "TransactionManager",
  "Router",
  "ConnextPriceOracle",
  "ERC20",
];

/** Must equal DEPLOYMENT_CONTRACT_NAMES in shared/config/deployments.ts (the test checks). */
export const VENDORED_DEPLOYMENT_CONTRACTS: readonly string[] = [
  "TransactionManager",
  "ConnextPriceOracle",
  "Multicall",
  "RouterFactory",
];

export const VENDORED_DIR = "shared/chain/artifacts";

type Deployments = Record<string, Record<string, { contracts: Record<string, { address: string }> }>>;

/** File name → exact file text, computed from the installed package. */
export function vendoredFiles(): ReadonlyMap<string, string> {
  const from = `${NXTP_CONTRACTS_PACKAGE}@${packageVersion()}`;
  const files = new Map<string, string>();
  for (const name of VENDORED_ABIS) {
    const { contractName, sourceName, abi } = packageArtifact(name);
    files.set(`${name}.json`, toText({ generatedBy: "npm run vendor:artifacts", from, contractName, sourceName, abi }));
  }
  files.set("deployments.json", toText(trimDeployments(packageDeployments())));
  return files;
}

/**
 * Keeps every chain and every deployment name in the package's order (the config takes the first name of a
 * chain), and of each deployment only the addresses of VENDORED_DEPLOYMENT_CONTRACTS.
 */
export function trimDeployments(raw: unknown): Deployments {
  const trimmed: Deployments = {};
  for (const [chainId, byName] of Object.entries(asObject(raw, "deployments.json"))) {
    trimmed[chainId] = {};
    for (const [deploymentName, deployment] of Object.entries(asObject(byName, chainId))) {
      const contracts = asObject(asObject(deployment, deploymentName).contracts ?? {}, `${deploymentName}.contracts`);
      const kept: Record<string, { address: string }> = {};
      for (const contract of VENDORED_DEPLOYMENT_CONTRACTS) {
        const address = (contracts[contract] as { address?: unknown } | undefined)?.address;
        if (typeof address === "string") {
          kept[contract] = { address };
        }
      }
      trimmed[chainId][deploymentName] = { contracts: kept };
    }
  }
  return trimmed;
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`${NXTP_CONTRACTS_PACKAGE}: ${what} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

function toText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function main(): void {
  // npm runs scripts from the package root.
  const dir = resolve(process.cwd(), VENDORED_DIR);
  const files = vendoredFiles();
  mkdirSync(dir, { recursive: true });
  for (const stale of readdirSync(dir).filter((f) => f.endsWith(".json") && !files.has(f))) {
    rmSync(join(dir, stale));
  }
  for (const [file, text] of files) {
    writeFileSync(join(dir, file), text);
  }
  process.stdout.write(`vendored ${[...files.keys()].join(", ")} into ${VENDORED_DIR}\n`);
}

if (require.main === module) {
  main();
}
