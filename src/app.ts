/**
 * `iqgate/app`: what an application module for `npm start` (IQGATE_APP) needs — defineApp, the
 * DSL and the serdes — and nothing else. `iqgate` (src/index.ts) also exports the runtime, the
 * query engine and the GraphQL gateway, whose modules (graphql-yoga, graphql-tools, prom-client:
 * about 600 files) then load before the runtime can start; with this entry, `npm start` loads
 * them while the runtime opens its state directory and joins its group (bench:restart).
 */
export { defineApp, type AppDefinition } from './runtime/app-module.js';
export { StreamsBuilder, KStream, KGroupedStream, KTable } from './processing/stream-builder.js';
export { TopologyBuilder, type Topology, type ProcessorContext, type ProcessorFn, type StreamRecord, type TypedStore } from './processing/topology.js';
export { serdes, serdeByName } from './store/serdes.js';
export type { Serde } from './store/types.js';
export { IqgateError, isIqgateError, ERROR_CODES, type ErrorCode } from './errors.js';
export type { RuntimeOptionsInput } from './runtime/runtime-options.js';
