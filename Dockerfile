# sluice: the rate-limit-aware proxy for the CRM API v2.
#   docker build -t sluice .
#   docker run --rm -p 8080:8080 -p 9090:9090 sluice        # proxy :8080 (/v2/...), admin :9090
# Settings: SLUICE_* env vars, or a YAML file named by SLUICE_CONFIG (see README "Settings").
# test/deploy/dockerfile.test.ts reads this file: keep CMD, EXPOSE, ENV and the runtime COPYs in step with it.

# Node 22 LTS on Debian bookworm, pinned by digest so a rebuild gets the same base. The digest is
# the one public Dockerfiles pinned for node:22-bookworm-slim when this line was written (no
# registry was reachable where it was written). To refresh it (and see which Node it carries):
#   docker buildx imagetools inspect node:22-bookworm-slim     # "Digest:" of the index
# then replace the sha256 below; docs/deploy.md "The image" says more.
ARG NODE_IMAGE=node:22-bookworm-slim@sha256:f32b81066cde10a75dbac96646099533316d94bac4150c55da1636e1f0ffdc46

# --- build: dev dependencies + tsc → dist/ ------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would run the build before the sources are here; it runs below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# The simulated API and the demo are for trying sluice out and for tests, not for the image. The commit
# goes into dist/revision, where sluice_build_info reads it (.git is not in the build context).
ARG REVISION=unknown
RUN npm run build && rm -rf dist/sim dist/demo && printf '%s\n' "$REVISION" > dist/revision

# --- deps: production dependencies only ---------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` (tsc) needs dev dependencies, which are omitted here; dist/ comes from build.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- rootfs: node and the libraries it links, from the same pinned image; no npm, no shell --------
FROM ${NODE_IMAGE} AS rootfs
WORKDIR /build
COPY scripts/image-rootfs.sh ./
RUN ./image-rootfs.sh /rootfs /usr/local/bin/node

# --- runtime: nothing but that root, sluice's dist/, its production node_modules and config/ -----
# No shell and no npm in the image (docs/deploy.md "The image"): `docker exec … sh` has nothing to
# run, and a compromised process finds no package manager; debug with `kubectl debug --target`.
FROM scratch
# Set by the build (docker build --build-arg VERSION=… --build-arg REVISION=$(git rev-parse HEAD) --build-arg CREATED=…).
ARG VERSION=0.2.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG NODE_IMAGE
# OCI image annotations (github.com/opencontainers/image-spec, annotations.md).
LABEL org.opencontainers.image.title="sluice" \
      org.opencontainers.image.description="Rate-limit-aware reverse proxy for the CRM API v2: shared per-endpoint concurrency limits, fair queueing instead of 429s." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
# sluice's own defaults bind loopback only (safe for a laptop); in a container the published ports
# and the kubelet reach it only on 0.0.0.0. The chart sets both again explicitly.
ENV PATH=/usr/local/bin \
    NODE_ENV=production \
    SLUICE_HOST=0.0.0.0 \
    SLUICE_ADMIN_HOST=0.0.0.0
WORKDIR /app
COPY --from=rootfs /rootfs/ /
# package.json carries "type": "module", which dist/*.js needs; config/ is found at ../config from dist/.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config ./config
# A numeric user (the node image's `node`), so Kubernetes' runAsNonRoot can verify it without an
# /etc/passwd. Files stay root-owned: read-only to sluice.
USER 1000:1000
EXPOSE 8080 9090
# For plain Docker / Compose; Kubernetes ignores it and uses the chart's probes on the same endpoint.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.SLUICE_ADMIN_PORT || 9090) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
# node itself is PID 1 (no npm, no shell), so SIGTERM reaches sluice's graceful shutdown.
CMD ["node", "dist/main.js"]
