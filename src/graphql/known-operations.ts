/**
 * The query texts yoga has parsed and validated without error — with every limit of the
 * gateway (graphql-armor's depth, cost, aliases, directives and tokens, all decided by the
 * document alone) — each with its parsed document. The fast path (node-fast-path.ts) executes
 * only these: a document that passed once passes again, so it skips parse and validation, as
 * yoga's own parser and validation cache would, without yoga's per-request machinery.
 *
 * Learned by a plugin that watches yoga's validation, so the first request of a text always
 * goes through yoga, which answers its errors exactly as before.
 */
import type { DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/** As many as yoga's own document cache holds by default. */
const DEFAULT_MAX = 1024;

export class KnownOperations {
  private readonly documents = new Map<string, DocumentNode>();

  constructor(private readonly max = DEFAULT_MAX) {}

  get(query: string): DocumentNode | undefined {
    return this.documents.get(query);
  }

  /** Past `max` texts the oldest learned is forgotten; yoga's next validation of it teaches it again. */
  learn(query: string, document: DocumentNode): void {
    if (this.documents.has(query)) return;
    if (this.documents.size >= this.max) this.documents.delete(this.documents.keys().next().value!);
    this.documents.set(query, document);
  }

  get size(): number {
    return this.documents.size;
  }
}

/** Yoga's context carries the request's params; envelop's validate hook sees the document. */
interface ParamsContext {
  readonly params?: { readonly query?: unknown };
}

export function useKnownOperations(known: KnownOperations): Plugin {
  return {
    onValidate({ params: { documentAST }, context }) {
      const query = (context as ParamsContext).params?.query;
      if (typeof query !== 'string') return;
      return ({ result }) => {
        if (result.length === 0) known.learn(query, documentAST);
      };
    },
  };
}
