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
# tsc copies the vendored ABIs (shared/chain/artifacts/*.json) next to the compiled loader; scripts/build.js
# (npm run build) also copies the Redis scripts (shared/redis/scripts/**/*.lua), which tsc does not.
RUN node scripts/build.js

FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# jemalloc for the auction instances (ecosystem.config.js preloads it where installed; docs/operating.md, memory).
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 && rm -rf /var/lib/apt/lists/*
# Owned by root and read-only to the `node` user: the processes never write to their own code.
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist/services ./dist/services
COPY --from=build /app/dist/shared ./dist/shared
COPY --from=build /app/dist/scripts ./dist/scripts
COPY package.json ecosystem.config.js ./
# ecosystem.config.js creates ROUTER_LOG_DIR (./logs) and writes per-app files there besides pm2-runtime's
# stdout, so that one directory belongs to the process user. /app/prometheus is where docker-compose.yml's
# prometheus-config service writes the scrape config: a named volume mounted there starts with this ownership.
RUN mkdir -p /app/logs /app/prometheus && chown node:node /app/logs /app/prometheus
# The official image's unprivileged user; PM2 keeps its state in /home/node/.pm2.
USER node
# Inside the container every process binds ROUTER_CONTAINER_HOST (admin API and metrics), replacing the config's
# host and metricsHost: a published port forwards to the container's own interface, never to its loopback, so
# config.example.json's host 127.0.0.1 would publish a port nothing answers on. Who reaches the admin API from
# outside is decided where the port is published (docker-compose.yml: 127.0.0.1 only); the metrics ports are
# published nowhere and reached by Prometheus on the compose network (`--profile monitoring`).
ENV ROUTER_CONTAINER_HOST=0.0.0.0
# The admin API: config.json's `port` (8080 by default).
EXPOSE 8080
# GET /ping at the container's own interface, where a published port forwards (scripts/healthcheck.ts): the port
# is HEALTHCHECK_PORT (docker-compose.yml: the container side of its `ports:` entry), else config.json's `port`.
HEALTHCHECK --interval=30s --timeout=8s --start-period=30s --retries=3 CMD ["node", "dist/scripts/healthcheck.js"]
# config.json is mounted at /app/config.json (or point ROUTER_CONFIG_FILE elsewhere).
CMD ["node_modules/.bin/pm2-runtime", "ecosystem.config.js"]
