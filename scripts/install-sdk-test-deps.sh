#!/usr/bin/env bash
# Installs test/sdk's own node_modules (the real @connext/nxtp-sdk@0.1.42 and its ethers v5, for
# test/e2e/sdk.test.ts), kept out of the router's dependency tree. Runs `npm ci` only when
# test/sdk/node_modules is missing or was installed from another package-lock.json (a sha256 stamp),
# so `npm test` pays the ~25 s install once per lockfile.
#   --legacy-peer-deps: @connext/nxtp-contracts peers hardhat (+334 MB) the SDK never loads; the lockfile
#   was generated without it (test/sdk/.npmrc says the same for hand-run npm commands there).
#   --ignore-scripts: the only install scripts (keccak, secp256k1 native builds) are optional; both fall
#   back to pure JS, and npm 11 skips them by default anyway.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/test/sdk"
stamp="$dir/node_modules/.lock-sha256"
want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -f "$dir/node_modules/@connext/nxtp-sdk/package.json" ]]; then
  exit 0
fi
echo "install-sdk-test-deps: npm ci in test/sdk" >&2
npm ci --prefix "$dir" --no-audit --no-fund --legacy-peer-deps --ignore-scripts
echo "$want" > "$stamp"
