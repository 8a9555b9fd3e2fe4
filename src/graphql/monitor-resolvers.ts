/**
 * Resolvers of the operator's fields (the /dashboard page reads them): the instance's identity,
 * commits and recent history, and per local partition its last commit, its input's end and its
 * lag. They read the StateProvider's optional InstanceMonitor; without one they are null.
 */
import { IqgateError } from '../errors.js';
import type { MetricsInterval } from '../query/instance-monitor.js';
import { inputLag } from '../query/input-lag.js';
import { Position } from '../store/position.js';
import type { GatewayContext } from './gateway-context.js';

const MAX_HISTORY_MINUTES = 10;

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** The parent object of LocalPartition (query-resolvers.ts, Store.localPartitions). */
interface LocalPartitionParent {
  readonly storeName: string;
  readonly partition: number;
  readonly taskId: string;
}

async function partitionEnd(parent: LocalPartitionParent, context: GatewayContext): Promise<Position | null> {
  const monitor = context.provider.monitor?.();
  if (monitor === undefined) return null;
  try {
    return await monitor.inputEnds(parent.storeName, parent.partition);
  } catch {
    return null; // the broker is away: Instance.kafkaError says so
  }
}

export const monitorResolvers = {
  Instance: {
    applicationId: (_: unknown, __: unknown, context: GatewayContext) => context.provider.monitor?.().applicationId ?? null,
    kafkaClient: (_: unknown, __: unknown, context: GatewayContext) => context.provider.monitor?.().kafkaClient() ?? null,
    processingGuarantee: (_: unknown, __: unknown, context: GatewayContext) => context.provider.monitor?.().processingGuarantee ?? null,
    commitIntervalMs: (_: unknown, __: unknown, context: GatewayContext) => context.provider.monitor?.().commitIntervalMs ?? null,
    commits: (_: unknown, __: unknown, context: GatewayContext) => context.provider.monitor?.().commits() ?? null,
    commitLatencyP50Ms: (_: unknown, __: unknown, context: GatewayContext) => context.provider.monitor?.().commitLatencyPercentileMs(50) ?? null,
    commitLatencyP99Ms: (_: unknown, __: unknown, context: GatewayContext) => context.provider.monitor?.().commitLatencyPercentileMs(99) ?? null,
    lastCommitAt: (_: unknown, __: unknown, context: GatewayContext) => iso(context.provider.monitor?.().lastCommitAt()),
    history(_: unknown, args: { minutes?: number | null }, context: GatewayContext) {
      const minutes = args.minutes ?? 5;
      if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_HISTORY_MINUTES) {
        throw new IqgateError('INVALID_ARGUMENT', `history(minutes:) takes 1 to ${MAX_HISTORY_MINUTES}; got ${minutes}.`);
      }
      const monitor = context.provider.monitor?.();
      if (monitor === undefined) return [];
      return monitor.history(minutes * 60_000).map((interval: MetricsInterval) => ({
        ...interval,
        start: new Date(interval.start).toISOString(),
        commitLatencyAvgMs: interval.commitLatencyAvgMs ?? null,
        commitLatencyMaxMs: interval.commitLatencyMaxMs ?? null,
      }));
    },
  },
  LocalPartition: {
    lastCommitAt: (parent: LocalPartitionParent, _: unknown, context: GatewayContext) => iso(context.provider.monitor?.().taskLastCommitAt(parent.taskId)),
    inputEnd: (parent: LocalPartitionParent, _: unknown, context: GatewayContext) => partitionEnd(parent, context),
    async lag(parent: LocalPartitionParent, _: unknown, context: GatewayContext) {
      const end = await partitionEnd(parent, context);
      const local = context.provider.localPartition(parent.storeName, parent.partition);
      if (end === null || local === undefined) return null;
      return inputLag(end, local.store.uncommittedPosition(), parent.partition) ?? null;
    },
  },
};
