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

# ---- build: compile the TypeScript into dist/ ----
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The compiler needs the packages' files (types included), none of their install scripts: no
# native Kafka client binary, no postinstall; the runtime stage installs its own.
RUN npm ci --ignore-scripts --no-audit --no-fund
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
COPY package.json package-lock.json ./
# The root postinstall fetches the native Kafka client's prebuilt binary (README "Run the tests");
# this image has no build tools, so where the download fails iqgate runs on kafkajs.
COPY scripts/install-kafka-native.mjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
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
