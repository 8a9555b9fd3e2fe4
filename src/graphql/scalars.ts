/**
 * Custom scalars: JSON (any value), Key (any JSON-ish literal, checked later against the
 * store's key serde, which the scalar cannot know), Position (topic → partition → offset).
 */
import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import { Position, type PositionJSON } from '../store/position.js';

function literalValue(node: ValueNode, variables: Record<string, unknown> | null | undefined): unknown {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
      return Number.parseInt(node.value, 10);
    case Kind.FLOAT:
      return Number.parseFloat(node.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map((value) => literalValue(value, variables));
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((field) => [field.name.value, literalValue(field.value, variables)]));
    case Kind.VARIABLE:
      return variables?.[node.name.value];
    case Kind.ENUM:
      return node.value;
  }
}

export const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: literalValue,
});

export const KeyScalar = new GraphQLScalarType({
  name: 'Key',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: literalValue,
});

function toPosition(value: unknown): Position {
  if (value instanceof Position) return value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GraphQLError('A Position is an object topic → partition → offset.', { extensions: { code: 'INVALID_ARGUMENT' } });
  }
  for (const partitions of Object.values(value)) {
    if (typeof partitions !== 'object' || partitions === null || Array.isArray(partitions)) {
      throw new GraphQLError('A Position maps each topic to an object partition → offset.', { extensions: { code: 'INVALID_ARGUMENT' } });
    }
  }
  try {
    return Position.fromJSON(value as PositionJSON);
  } catch (error) {
    throw new GraphQLError(`Invalid Position: ${(error as Error).message}`, { extensions: { code: 'INVALID_ARGUMENT' } });
  }
}

export const PositionScalar = new GraphQLScalarType({
  name: 'Position',
  serialize: (value) => (value instanceof Position ? value.toJSON() : value),
  parseValue: toPosition,
  parseLiteral: (node, variables) => toPosition(literalValue(node, variables)),
});
