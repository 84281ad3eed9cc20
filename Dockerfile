# syntax=docker/dockerfile:1
#
# Switchyard container image (docs/deploy.md).
#
#   docker build -t switchyard:0.1.0 .
#   docker run --rm -p 127.0.0.1:8080:8080 switchyard:0.1.0     # runs on the simulator, no keys
#
# Base: the Node 24 LTS line, pinned by major. package.json needs Node >= 20.19; CI
# (.ci/run) runs the whole test suite on the machine's Node and again on Node 24, so 24 is
# the LTS line the code is tested on (Node 22 is in maintenance; Node 20 is end-of-life).
# For reproducible builds pin the digest too: FROM node:24-slim@sha256:<digest>.
ARG NODE_IMAGE=node:24-slim

# ---- build: dev dependencies + TypeScript -> dist/ -------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Dependencies first, so the layer is reused while only sources change. No dependency
# needs an install script (.ci/run installs the same way).
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
RUN npm run build

# ---- runtime: production dependencies + compiled JS + shipped data ---------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
# package.json also marks the package root: src/util/package-root.ts walks up from
# dist/ to the package.json named "switchyard" to find the simulator recordings.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
COPY src/providers/simulator/recordings ./src/providers/simulator/recordings
# The console's HTML, CSS and browser scripts, read from <package root>/src/server/console/assets
# at start (src/server/console/assets.ts), like the recordings.
COPY src/server/console/assets ./src/server/console/assets
# The node image's unprivileged user (uid 1000). Files stay root-owned: the gateway
# writes only the ledger's spool, to /var/lib/switchyard (mount a volume there), so the
# image also runs with a read-only root filesystem.
RUN mkdir -p /var/lib/switchyard && chown node:node /var/lib/switchyard
USER node
# 8080: client API, /healthz, /readyz, /metrics. 9901: admin API, only when
# admin.key_sha256 is set and admin.host is not loopback (e.g. 0.0.0.0).
EXPOSE 8080 9901
# No curl in slim images: Node's own fetch. Uses PORT, so it follows a changed port.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM starts the graceful drain: up to server.drain_ms (default 25 s), then at most 4 s
# to close. Docker's default stop timeout is 10 s: use `docker stop -t 30` /
# `docker run --stop-timeout 30`, or a grace period above drain_ms + 4 s in the orchestrator.
STOPSIGNAL SIGTERM
# node as PID 1, no npm or shell in between, so SIGTERM reaches the gateway. The heap flags
# are npm start's (package.json; why: docs/performance.md, "Heap settings"): no memory
# reducer (its shrinking made the first seconds after an idle spell slow) and gc() for the
# collection after a burst (src/server/lifecycle/idle-gc.ts).
ENTRYPOINT ["node", "--expose-gc", "--no-memory-reducer", "dist/main.js"]
