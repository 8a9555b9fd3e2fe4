# iqgate as a container: compiled JavaScript on node:24-bookworm-slim, production dependencies
# only, running as the unprivileged `node` user, its LevelDB state on a volume.
#   docker build -t iqgate . && docker run -e KAFKA_BROKERS=kafka:9092 -p 4000:4000 iqgate
# That runs the wordcount demo; for your own topology (README "Run your own application"),
# mount a JavaScript module and name it:
#   docker run -e KAFKA_BROKERS=kafka:9092 -e IQGATE_APP=/app/apps/my-app.mjs \
#     -v $PWD/my-app.mjs:/app/apps/my-app.mjs:ro -p 4000:4000 iqgate
# compose.yaml runs it beside an Apache Kafka broker. `docker run ... iqgate node dist/src/cli.js
# --help` lists every setting. test/integration/ship/docker-tree.test.ts rebuilds this image's
# file tree from the COPY and RUN lines below (without Docker) and starts it against a broker.

# ---- build: compile the TypeScript into dist/, and get the native Kafka client ----
FROM node:24-bookworm-slim AS build
WORKDIR /app
# A toolchain and OpenSSL's headers: where the native Kafka client's prebuilt binary does not
# download, the postinstall builds librdkafka from source (about 2 minutes on 2 cores).
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ libssl-dev zlib1g-dev && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY scripts/install-kafka-native.mjs ./scripts/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json schema.graphql ./
COPY scripts/build.mjs ./scripts/
COPY scripts/kafka ./scripts/kafka
COPY src ./src
COPY examples ./examples
RUN npm run build

# ---- runtime: dist/ and the production dependencies ----
FROM node:24-bookworm-slim
WORKDIR /app
# HOST=0.0.0.0 serves other machines: start-up then needs IQGATE_API_KEYS_FILE, a JWT key source
# (IQGATE_JWT_JWKS_URL) or IQGATE_ANONYMOUS=true by choice, and refuses otherwise (docs/security.md).
ENV NODE_ENV=production PORT=4000 HOST=0.0.0.0 IQGATE_STATE_DIR=/var/lib/iqgate UV_THREADPOOL_SIZE=16
# libssl3: a native Kafka client built from source links OpenSSL dynamically.
RUN apt-get update && apt-get install -y --no-install-recommends libssl3 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# The production dependencies without install scripts; the native Kafka client's binary comes
# from the build stage (built there with its toolchain, or its prebuilt download), so this
# stage needs neither build tools nor GitHub, and iqgate runs on librdkafka.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/node_modules/@confluentinc/kafka-javascript/build ./node_modules/@confluentinc/kafka-javascript/build
COPY --from=build /app/dist ./dist
# The state directory belongs to the user the server runs as.
RUN mkdir -p /var/lib/iqgate && chown node:node /var/lib/iqgate
USER node
EXPOSE 4000
VOLUME ["/var/lib/iqgate"]
# Healthy while the instance serves queries (GET /ready: RUNNING or REBALANCING). The slim image
# has no curl, so node asks; the start period covers a restore from the changelogs.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 4000}/ready`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/src/cli.js", "start"]
