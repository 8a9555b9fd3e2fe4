import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { KnownOperations } from '../../../src/graphql/known-operations.js';

describe('KnownOperations', () => {
  it('keeps at most its bound of query texts, forgetting the oldest learned first', () => {
    const known = new KnownOperations(2);
    const a = parse('{ a }');
    known.learn('{ a }', a);
    known.learn('{ b }', parse('{ b }'));
    known.learn('{ a }', parse('{ a }')); // already known: neither replaced nor moved
    expect(known.get('{ a }')).toBe(a);
    known.learn('{ c }', parse('{ c }'));
    expect(known.get('{ a }')).toBeUndefined();
    expect(known.get('{ b }')).toBeDefined();
    expect(known.get('{ c }')).toBeDefined();
    expect(known.size).toBe(2);
  });
});
