# The router's processes under pm2-runtime (ecosystem.config.js). Three stages so the image carries neither
# the TypeScript toolchain nor dev dependencies (jest, anvil, @connext/nxtp-contracts with its hardhat tooling):
#   build      npm ci (all dependencies) + tsc → dist/
#   prod-deps  npm ci --omit=dev → production node_modules only
#   runtime    Node 22 LTS, dist/ + production node_modules, non-root user `node`
# package.json keeps `engines: >=20` because the build machines run Node 20; the image runs 22 (20 is past
# its end of life). .npmrc is copied because package-lock.json was resolved with legacy-peer-deps.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY services ./services
COPY shared ./shared
COPY scripts ./scripts
# tsc copies the vendored ABIs (shared/chain/artifacts/*.json) next to the compiled loader.
RUN npx tsc -p tsconfig.build.json

FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# Owned by root and read-only to the `node` user: the processes never write to their own code.
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist/services ./dist/services
COPY --from=build /app/dist/shared ./dist/shared
COPY --from=build /app/dist/scripts ./dist/scripts
COPY package.json ecosystem.config.js ./
# ecosystem.config.js creates ROUTER_LOG_DIR (./logs) and writes per-app files there besides pm2-runtime's
# stdout, so that one directory belongs to the process user.
RUN mkdir -p /app/logs && chown node:node /app/logs
# The official image's unprivileged user; PM2 keeps its state in /home/node/.pm2.
USER node
# The admin API: config.json's `port` (8080 by default) with `host` 0.0.0.0 (the default) inside a container.
EXPOSE 8080
# GET /ping on the admin API answers `pong` once the admin process listens; the port comes from the config.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD node -e 'const c = JSON.parse(require("node:fs").readFileSync(process.env.ROUTER_CONFIG_FILE || "config.json", "utf8")); \
    const h = !c.host || c.host === "0.0.0.0" || c.host === "::" ? "127.0.0.1" : c.host; \
    fetch("http://" + (h.includes(":") ? "[" + h + "]" : h) + ":" + (c.port || 8080) + "/ping", { signal: AbortSignal.timeout(4000) }) \
      .then((r) => r.text().then((t) => process.exit(r.ok && t === "pong" ? 0 : 1)), () => process.exit(1));'
# config.json is mounted at /app/config.json (or point ROUTER_CONFIG_FILE elsewhere).
CMD ["node_modules/.bin/pm2-runtime", "ecosystem.config.js"]
