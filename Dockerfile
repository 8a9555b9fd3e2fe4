# iqgate as a container (for users; the development machines have no Docker engine).
# Point it at your Kafka cluster with KAFKA_BROKERS; the GraphQL endpoint listens on PORT.
#   docker build -t iqgate . && docker run -e KAFKA_BROKERS=kafka:9092 -p 4000:4000 iqgate
# That runs the wordcount demo; for your own topology (README "Run your own application"):
#   docker run -e KAFKA_BROKERS=kafka:9092 -e IQGATE_APP=/app/apps/my-app.ts \
#     -v $PWD/my-app.ts:/app/apps/my-app.ts -p 4000:4000 iqgate
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production PORT=4000 HOST=0.0.0.0 IQGATE_STATE_DIR=/var/lib/iqgate
COPY package.json package-lock.json ./
# The root postinstall fetches the native Kafka client's prebuilt binary (README "Run the tests");
# without build tools in this image a failed download leaves the runtime on kafkajs.
COPY scripts/install-kafka-native.mjs ./scripts/
# tsx is a runtime dependency: iqgate runs its TypeScript sources directly.
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json schema.graphql ./
COPY src ./src
COPY examples ./examples
# Only used when KAFKA_BROKERS is unset (and then it needs a JDK, which this image lacks:
# the launcher says so with JAVA_MISSING).
COPY scripts ./scripts
EXPOSE 4000
VOLUME ["/var/lib/iqgate"]
CMD ["node", "--import", "tsx", "src/main.ts"]
