/**
 * iqgate's public API, for embedding it in a Node service:
 *
 *   const builder = new StreamsBuilder();
 *   builder.table('accounts', { store: 'balances', key: serdes.string, value: serdes.json });
 *   const runtime = createRuntime({ applicationId: 'bank', brokers: 'kafka:9092', stateDir: '/var/lib/bank', topology: builder.build() });
 *   await runtime.start();
 *   const { url } = await serve(runtime, { port: 4000 });
 *   installShutdownHooks({ stop: async () => { await runtime.stop(); } });
 */
// Before anything loads kafkajs: the patches fix kafkajs 2.2.4's read_committed filtering.
import './kafka/kafkajs-patches.js';

export { IqgateError, isIqgateError, ERROR_CODES, type ErrorCode } from './errors.js';

// state stores
export {
  Position,
  type PositionJSON,
  serdes,
  serdeByName,
  type Serde,
  type Bytes,
  type KeyValue,
  type RangeOptions,
  type ReadView,
  type KeyValueStorePartition,
  type StoreEngine,
  type StoreEngineOptions,
  type TaskStores,
  createInMemoryStoreEngine,
  openLevelStoreEngine,
} from './store/index.js';

// topology and DSL
export { StreamsBuilder, KStream, KGroupedStream, KTable } from './processing/stream-builder.js';
export { TopologyBuilder, type Topology, type ProcessorContext, type ProcessorFn, type StreamRecord, type TypedStore } from './processing/topology.js';

// runtime
export { createRuntime, Runtime, type RuntimeConfig, type RuntimeState, type RuntimeStopOptions, type TaskOwner } from './runtime/runtime.js';
export type { RuntimeOptionsInput } from './runtime/runtime-options.js';
export { installShutdownHooks } from './runtime/shutdown-hooks.js';
export { createLogger, logFormatFor, LOG_FORMATS, type LogFormat, type LoggerOptions } from './runtime/create-logger.js';
export { defineApp, loadApp, type AppDefinition, type LoadedApp } from './runtime/app-module.js';
export { RuntimeStateProvider } from './runtime/runtime-state-provider.js';
export { registerProcessingMetrics } from './runtime/processing-metrics-exporter.js';

// queries and the gateway
export { QueryEngine } from './query/query-engine.js';
export { partitionForKey } from './murmur2.js';
export type { StateProvider, StoreDescriptor, LocalStorePartition, InstanceState, InstanceError } from './query/state-provider.js';
export { StaticStateProvider } from './query/static-state-provider.js';
export { createGateway, type Gateway } from './graphql/create-gateway.js';
export type { GatewayOptions } from './graphql/gateway-options.js';
export { listenGateway, type ListeningGateway } from './graphql/listen-gateway.js';
export { serve, type ServeOptions, type Serving } from './serve.js';
