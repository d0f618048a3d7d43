# One image for the gateway (default command) and the edge sidecar (`node dist/src/sidecar/main.js`).
# Build: docker build -t agent-governance .
# Gateway: docker run -p 3000:3000 -p 50051:50051 -v agentgov-data:/data agent-governance
# Sidecar: docker run -p 4000:4000 -e GATEWAY_URL=... -e ADMIN_TOKEN=... agent-governance node dist/src/sidecar/main.js
# Deployment examples (compose, Kubernetes) and the operator's guide: deploy/, docs/operations.md.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
COPY migrations ./migrations
COPY proto ./proto
COPY sdk/typescript ./sdk/typescript
COPY web ./web
# The dashboard's API types are generated from the gateway's OpenAPI document during the build.
COPY scripts/dashboard-api-types.mjs ./scripts/
# bench/ is neither copied nor in the build context (.dockerignore): the benchmarks and their
# stand-in servers are not part of what runs in production.
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim AS runtime
# No demo policies by default: POLICIES_FILE names an empty file, so org_default starts with none
# (docs/production.md "Turning off the demo policies"). Mount your own file and point
# POLICIES_FILE at it; the demo set stays in the image for a first look:
# -e POLICIES_FILE=/app/config/policies.yaml.
ENV NODE_ENV=production \
    DATA_DIR=/data \
    CACHE_DIR=/cache \
    POLICIES_FILE=/dev/null
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./package.json
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node config ./config
COPY --chown=node:node deploy/healthcheck.js ./deploy/healthcheck.js
RUN mkdir -p /data /cache && chown node:node /data /cache
# The node image's unprivileged user (uid 1000).
USER node
VOLUME ["/data", "/cache"]
EXPOSE 3000 50051 4000
# GET /health on the port of the role the container runs (gateway 3000, sidecar 4000, or PORT).
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s \
  CMD ["node", "deploy/healthcheck.js"]
# A 32 MB young generation: the gateway allocates fast and keeps the audit queue briefly;
# see docs/architecture.md ("Garbage collection").
CMD ["node", "--max-semi-space-size=32", "dist/src/main.js"]
