/**
 * Why a task's stores close, as the subscribers of their change feeds hear it
 * (TaskStores.close(reason)). A feed that stops without a word looks like a quiet store forever,
 * so each close names its cause with a stable code: PARTITION_REVOKED when the group moved the
 * partition to another member (Kafka Streams' StateStoreMigratedException: rediscover the owner),
 * STORE_CLOSED when this instance stops (its StateStoreNotAvailableException). Both are
 * retriable: the partition is served again, by its next owner.
 *
 * A task re-opened after a failed commit keeps its stores open (TaskRecovery): its feeds follow
 * it through the roll-back and the restore, and nothing is said.
 */
import { IqgateError } from '../errors.js';

export function revokedReason(taskId: string): IqgateError {
  return new IqgateError('PARTITION_REVOKED', `task ${taskId} left this instance in a rebalance; its partition is served by its new owner`, {
    retriable: true,
    details: { taskId },
  });
}

export function shutdownReason(taskId: string, failed: boolean): IqgateError {
  const why = failed ? 'the instance stopped after a failure' : 'the instance is shutting down';
  return new IqgateError('STORE_CLOSED', `task ${taskId} closed: ${why}`, {
    retriable: true,
    details: { taskId, shutdown: true },
  });
}
