# One image for the gateway (default command) and the edge sidecar (`node dist/src/sidecar/main.js`).
# Build: docker build -t agent-governance .
# Gateway: docker run -p 3000:3000 -p 50051:50051 -v agentgov-data:/data agent-governance
# Sidecar: docker run -p 4000:4000 -e GATEWAY_URL=... -e ADMIN_TOKEN=... agent-governance node dist/src/sidecar/main.js

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
COPY migrations ./migrations
COPY bench ./bench
COPY proto ./proto
COPY sdk/typescript ./sdk/typescript
COPY web ./web
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    DATA_DIR=/data \
    CACHE_DIR=/cache \
    POLICIES_FILE=/app/config/policies.yaml
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./package.json
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node config ./config
RUN mkdir -p /data /cache && chown node:node /data /cache
# The node image's unprivileged user (uid 1000).
USER node
VOLUME ["/data", "/cache"]
EXPOSE 3000 50051 4000
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
# A 32 MB young generation: the gateway allocates fast and keeps the audit queue briefly;
# see docs/architecture.md ("Garbage collection").
CMD ["node", "--max-semi-space-size=32", "dist/src/main.js"]
