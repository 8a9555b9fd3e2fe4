/**
 * Exactly-once v1 (one transactional producer per task, kafkajs): an instance warming up to join
 * its group connects the producers of every task it warms (ProducerFactoryPort.prepare), so a
 * task the group then gives it opens with its transactional InitProducerId only; most of a kafkajs producer's
 * set-up is its connect (docs/kafkajs-notes.md §5 "Connecting ahead"). The assignment lets go of
 * the producers of the tasks it did not bring. Nothing is prepared under an instance transaction
 * (one producer for the instance) or at-least-once (one shared idempotent producer).
 */
import type { ProducerFactoryPort, TopicPartition } from './ports.js';
import type { SubTopologyPlan } from './sub-topology-plan.js';
import { transactionalIdFor } from './topic-names.js';

export interface PreparedProducersDeps {
  readonly producers: ProducerFactoryPort;
  readonly applicationId: string;
  readonly plans: readonly SubTopologyPlan[];
  /** Whether tasks have transactional producers of their own. */
  readonly perTaskTransactions: boolean;
}

export class PreparedProducers {
  private readonly planById: ReadonlyMap<number, SubTopologyPlan>;
  private readonly planOfTopic = new Map<string, SubTopologyPlan>();
  /** Some prepared producers may still wait for their tasks. */
  private pending = false;

  constructor(private readonly deps: PreparedProducersDeps) {
    this.planById = new Map(deps.plans.map((plan) => [plan.id, plan]));
    for (const plan of deps.plans) for (const topic of plan.sourceTopics) this.planOfTopic.set(topic, plan);
  }

  /** The warm-up tails these tasks: their producers connect now. */
  warming(tasks: ReadonlyArray<{ readonly subTopology: number; readonly partition: number }>): void {
    if (!this.deps.perTaskTransactions || this.deps.producers.prepare === undefined) return;
    const ids: string[] = [];
    for (const t of tasks) {
      const plan = this.planById.get(t.subTopology);
      if (plan !== undefined) ids.push(transactionalIdFor(this.deps.applicationId, plan.transactionalTopic, t.partition));
    }
    this.deps.producers.prepare(ids);
    this.pending = ids.length > 0;
  }

  /** The warm-up is over with this assignment: the prepared producers of its tasks stay for their opens (queued already), the others close. */
  assigned(assignment: readonly TopicPartition[]): void {
    if (!this.pending) return;
    const assigned = new Set<string>();
    for (const tp of assignment) {
      const plan = this.planOfTopic.get(tp.topic);
      if (plan !== undefined) assigned.add(transactionalIdFor(this.deps.applicationId, plan.transactionalTopic, tp.partition));
    }
    this.deps.producers.releasePrepared?.((id) => assigned.has(id));
    this.pending = false;
  }

  /** The warm-up ended without an assignment that brought tasks (an empty one, then its 30 s went by: JoinWarmth): every prepared producer closes. */
  warmupOver(): void {
    if (!this.pending) return;
    this.pending = false;
    this.deps.producers.releasePrepared?.(() => false);
  }
}
