# kb-platform: one image for the six services (gateway, documents, ingestion, retrieval, check,
# agent); the command picks the service. The gateway also serves the review workspace (the browser
# app) at /app/. See deploy/README.md.
#
#   docker build -t kb-platform:dev .                                   # every service, no OCR tools
#   docker build --build-arg WITH_OCR=true -t kb-platform-ingestion:dev .   # + poppler-utils, tesseract (for ingestion)
#
#   docker run kb-platform:dev gateway          # or documents | ingestion | retrieval | check | agent | webhooks
#   docker run kb-platform:dev kbctl org list   # the operator CLI (DATABASE_URL must be set)
#
# Plain Dockerfile syntax (no BuildKit-only features such as RUN --mount or heredocs), so the
# file builds with BuildKit, the legacy builder, Buildah/Podman and Kaniko alike.
# linux/amd64 and linux/arm64: the native packages (LanceDB, sharp) are installed for the build's
# architecture at the versions the lockfile pins for linux-x64 (deploy/docker/verify-installed.mjs
# accepts such a platform sibling of a locked package, and nothing else).

ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# ---------------------------------------------------------------------------------------------
# build: every dependency (dev included), ts-proto code generation, tsc into dist/, and the review
# workspace (apps/web, Vite) into dist/web, which the gateway serves at /app/
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
COPY deploy/docker/verify-installed.mjs /usr/local/lib/kb/
# `npm install` honouring the lockfile, checked against it afterwards (npm ci rejects this
# lockfile: see deploy/docker/verify-installed.mjs). Optional packages are left out (other
# platforms' binaries), except the two native packages Vite needs to build the workspace, added
# back for the build's architecture at their locked versions: Rolldown's (the bundler) and
# Lightning CSS's (CSS minification). Install scripts are not run (none is needed, some phone
# home or download).
RUN case "$(dpkg --print-architecture)" in \
      amd64) arch=x64 ;; \
      arm64) arch=arm64 ;; \
      *) echo "kb-platform images are built for linux/amd64 and linux/arm64, not $(dpkg --print-architecture)" >&2; exit 1 ;; \
    esac \
 && cp package-lock.json /tmp/package-lock.json \
 && npm install --include=dev --omit=optional --ignore-scripts --no-save --no-audit --no-fund \
 && locked() { node -p "require('/tmp/package-lock.json').packages['node_modules/$1'].version"; } \
 && npm install --include=dev --omit=optional --ignore-scripts --no-save --no-audit --no-fund \
      "@rolldown/binding-linux-$arch-gnu@$(locked @rolldown/binding-linux-x64-gnu)" \
      "lightningcss-linux-$arch-gnu@$(locked lightningcss-linux-x64-gnu)" \
 && node /usr/local/lib/kb/verify-installed.mjs /tmp/package-lock.json node_modules --arch "$arch" \
 && test -d "node_modules/@rolldown/binding-linux-$arch-gnu" \
 && test -d "node_modules/lightningcss-linux-$arch-gnu"
COPY tsconfig.json tsconfig.base.json tsconfig.build.json ./
COPY tools ./tools
COPY proto ./proto
COPY libs ./libs
COPY apps ./apps
# The workspace imports the SDK from source (its browser entry; the generated OpenAPI types it
# names are type-only imports, which Vite drops). No packages/*/package.json: the clients
# themselves are not built here (tools/build.mjs).
COPY packages/sdk/src ./packages/sdk/src
RUN node tools/build.mjs \
 && rm -f dist/.tsbuildinfo \
 && test -f dist/apps/gateway/src/main.js \
 && test -f dist/apps/gateway/src/cli/kbctl.js \
 && test -f dist/web/index.html \
 && ls dist/web/assets/*.js >/dev/null

# ---------------------------------------------------------------------------------------------
# prod-deps: production dependencies only, exactly at their locked versions
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
COPY deploy/docker/verify-installed.mjs /usr/local/lib/kb/
# Optional dependencies are left out (other platforms' binaries). The native packages the service
# loads are optional packages of their parents, so they are added back explicitly at their locked
# versions: LanceDB's, and sharp's (transformers.js, the in-process embedding model, loads sharp
# at import). onnxruntime-node ships its Linux CPU binary inside the package; its install script
# (a download) is not run (--ignore-scripts).
RUN case "$(dpkg --print-architecture)" in \
      amd64) arch=x64 ;; \
      arm64) arch=arm64 ;; \
      *) echo "kb-platform images are built for linux/amd64 and linux/arm64, not $(dpkg --print-architecture)" >&2; exit 1 ;; \
    esac \
 && cp package-lock.json /tmp/package-lock.json \
 && npm install --omit=dev --omit=optional --ignore-scripts --no-save --no-audit --no-fund \
 && locked() { node -p "require('/tmp/package-lock.json').packages['node_modules/$1'].version"; } \
 && npm install --omit=dev --omit=optional --ignore-scripts --no-save --no-audit --no-fund \
      "@lancedb/lancedb-linux-$arch-gnu@$(locked @lancedb/lancedb)" \
      "@img/sharp-linux-$arch@$(locked @img/sharp-linux-x64)" \
      "@img/sharp-libvips-linux-$arch@$(locked @img/sharp-libvips-linux-x64)" \
 && node /usr/local/lib/kb/verify-installed.mjs /tmp/package-lock.json node_modules --arch "$arch" \
 && test -d "node_modules/@lancedb/lancedb-linux-$arch-gnu" \
 && test -d "node_modules/@img/sharp-linux-$arch" \
 && test -f "node_modules/onnxruntime-node/bin/napi-v6/linux/$arch/libonnxruntime.so.1" \
 && rm -rf /root/.npm

# ---------------------------------------------------------------------------------------------
# model: the default embedding model, fetched from the Hugging Face hub at build time and baked
# into the image (KB_MODELS_DIR=/app/models), so hybrid search works on air-gapped clusters.
# EMBEDDINGS_MODEL picks another transformers.js model (docs/retrieval.md); HF_ENDPOINT a mirror.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS model
ARG EMBEDDINGS_MODEL=Xenova/all-MiniLM-L6-v2
ARG HF_ENDPOINT=
WORKDIR /src
COPY --from=prod-deps /src/node_modules ./node_modules
COPY tools/fetch-model.mjs ./tools/
# tools/fetch-model.mjs downloads with transformers.js into the local layout and loads the model
# once; exit 3 (hub unreachable) or 1 (failed) fails the build with the reason.
RUN HF_ENDPOINT="${HF_ENDPOINT}" node tools/fetch-model.mjs --dir /models --model "${EMBEDDINGS_MODEL}" --dtype q8 \
 && test -f "/models/${EMBEDDINGS_MODEL}/tokenizer.json" \
 && test -f "/models/${EMBEDDINGS_MODEL}/onnx/model_quantized.onnx"

# ---------------------------------------------------------------------------------------------
# runtime: node:24.21.0-bookworm-slim (Node 24 LTS), production dependencies and dist/ only, non-root, read-only root
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG NODE_IMAGE

# true: also install poppler-utils + tesseract-ocr(-eng), which ingestion needs (PDF text
# extraction, page rasterising, OCR). Only the ingestion image needs them (deploy/README.md).
ARG WITH_OCR=false
# OCI image labels (set by CI: --build-arg VERSION=1.2.3 --build-arg REVISION=$(git rev-parse HEAD) ...)
ARG VERSION=0.0.0-dev
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=unknown

LABEL org.opencontainers.image.title="kb-platform" \
      org.opencontainers.image.description="Knowledge base and compliance-checking service (gateway, documents, ingestion, retrieval, check, agent, webhooks)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${NODE_IMAGE}" \
      io.kb-platform.ocr="${WITH_OCR}"

# tini as PID 1: forwards signals and reaps the pdftotext/pdftoppm/tesseract children of ingestion.
# npm, npx, corepack and yarn are removed: nothing runs them at run time.
RUN set -eu; \
    packages="tini"; \
    case "$WITH_OCR" in \
      true) packages="$packages poppler-utils tesseract-ocr tesseract-ocr-eng" ;; \
      false) ;; \
      *) echo "WITH_OCR must be true or false, not '$WITH_OCR'" >&2; exit 1 ;; \
    esac; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb; \
    rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*; \
    if [ "$WITH_OCR" = true ]; then pdftotext -v; pdfinfo -v; pdftoppm -v; tesseract --list-langs | grep -qx eng; fi; \
    mkdir -p /data/lancedb /data/objects /data/work; \
    chown -R 1000:1000 /data; \
    chmod 0750 /data/lancedb /data/objects /data/work

# The only writable places are volumes under /data (created here owned by uid 1000 so that new
# Docker volumes inherit that owner) and /tmp (a tmpfs or emptyDir in compose and the chart).
ENV NODE_ENV=production \
    GRPC_HOST=0.0.0.0 \
    GATEWAY_HOST=0.0.0.0 \
    RETRIEVAL_DATA_DIR=/data/lancedb \
    KB_MODELS_DIR=/app/models \
    STORAGE_LOCAL_DIR=/data/objects \
    INGESTION_WORK_DIR=/data/work

WORKDIR /app
COPY --from=prod-deps /src/node_modules ./node_modules
# dist/ holds the services and the review workspace (dist/web, served by the gateway at /app/;
# GATEWAY_WORKSPACE_DIR defaults to it).
COPY --from=build /src/dist ./dist
# The embedding model (read-only; KB_MODELS_DIR).
COPY --from=model /models ./models
# The embedded judge's cross-encoders, committed with their training scripts (check service; found from
# dist/ as /app/libs/text/models/judge-rsm-minilm and judge-nli-minilm; JUDGE_RSM_MODEL_DIR and
# JUDGE_NLI_MODEL_DIR override them).
COPY libs/text/models ./libs/text/models
COPY package.json ./
COPY deploy/docker/entrypoint.sh deploy/docker/healthcheck.mjs ./deploy/docker/
# The sample construction-safety corpus, so `kbctl safety load /app/samples/safety-corpus` works in the image.
COPY samples ./samples

# uid/gid 1000 is the `node` user of the base image; numeric so that Kubernetes can verify runAsNonRoot.
USER 1000:1000
# HTTP API, gRPC ports, Prometheus /metrics ports (see the README configuration table).
EXPOSE 8080 50051 50052 50053 50054 50055 9460 9461 9462 9463 9464 9465

# Finds the service in PID 1's command line: /healthz for the gateway, grpc.health.v1 for the others.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "/app/deploy/docker/healthcheck.mjs"]

ENTRYPOINT ["/usr/bin/tini", "--", "/bin/sh", "/app/deploy/docker/entrypoint.sh"]
CMD ["gateway"]
