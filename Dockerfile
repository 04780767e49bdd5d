# The router's processes under pm2-runtime (the project's own pm2 dependency), built from this repository.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY services ./services
COPY shared ./shared
COPY scripts ./scripts
COPY bench ./bench
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ecosystem.config.js ./
USER node
# config.json is mounted at /app/config.json (or point ROUTER_CONFIG_FILE elsewhere).
CMD ["node_modules/.bin/pm2-runtime", "ecosystem.config.js"]
