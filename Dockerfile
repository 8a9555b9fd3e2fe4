# iqgate as a container (for users; the development machines have no Docker engine).
# Point it at your Kafka cluster with KAFKA_BROKERS; the GraphQL endpoint listens on PORT.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production PORT=4000
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm install --no-save tsx@4.23.15
COPY tsconfig.json schema.graphql ./
COPY src ./src
COPY examples ./examples
EXPOSE 4000
VOLUME ["/var/lib/iqgate"]
ENV IQGATE_STATE_DIR=/var/lib/iqgate
CMD ["npx", "tsx", "src/main.ts"]
