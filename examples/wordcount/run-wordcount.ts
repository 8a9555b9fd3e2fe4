/** `runWordcount(config)`: the wordcount topology on a started runtime. */
import { createRuntime, type Runtime, type RuntimeConfig } from '../../src/runtime/runtime.js';
import type { RuntimeOptionsInput } from '../../src/runtime/runtime-options.js';
import { buildWordcountTopology, type WordcountTopologyOptions } from './wordcount-topology.js';

export type WordcountConfig = Omit<RuntimeOptionsInput, 'applicationId'> & Pick<RuntimeConfig, 'logger'> & WordcountTopologyOptions & {
  /** Default `wordcount`. */
  readonly applicationId?: string;
};

export async function runWordcount(config: WordcountConfig): Promise<Runtime> {
  const { inputTopic, outputTopic, storeName, applicationId, ...options } = config;
  const runtime = createRuntime({
    ...options,
    applicationId: applicationId ?? 'wordcount',
    topology: buildWordcountTopology({ inputTopic, outputTopic, ...(storeName !== undefined ? { storeName } : {}) }),
  });
  await runtime.start();
  return runtime;
}
