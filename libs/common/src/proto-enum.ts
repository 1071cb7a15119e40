import { AppError } from './errors';

/** The domain value type of a codec: `ValueOf<typeof documentStatus>` = `'awaiting_upload' | …`. */
export type ValueOf<C> = C extends ProtoEnumCodec<infer S, number> ? S : never;

/** Converts a domain status string to and from its proto enum value (see {@link protoEnumCodec}). */
export interface ProtoEnumCodec<S extends string, E extends number> {
  /** The domain values, in declaration order. */
  readonly values: readonly S[];
  /** The proto value of a domain value. */
  toProto(value: S): E;
  /**
   * The domain value of a proto value.
   * @throws AppError VALIDATION_ERROR naming `field` and the allowed values for UNSPECIFIED (0) or an unknown number.
   */
  fromProto(value: E, field?: string): S;
}

/**
 * A codec between a domain string union (`'awaiting_upload' | 'ready' | …`) and the ts-proto enum
 * of the same values, derived by name so the mapping is written nowhere: the value `not-comply`
 * of prefix `SUB_REQUIREMENT_STATUS` is `SUB_REQUIREMENT_STATUS_NOT_COMPLY` (the protobuf style
 * guide's enum naming: the enum's name in UPPER_SNAKE_CASE as prefix, zero = `_UNSPECIFIED`).
 *
 * @param protoEnum the generated enum object (name → number).
 * @param prefix the enum values' prefix, e.g. `DOCUMENT_STATUS`.
 * @param values the domain values; each must have an enum member (checked here, at load).
 * @throws Error at load when a value has no enum member (the proto and the list disagree).
 */
export function protoEnumCodec<const S extends string, P extends Record<string, string | number>>(
  protoEnum: P,
  prefix: string,
  values: readonly S[],
): ProtoEnumCodec<S, Extract<P[keyof P], number>> {
  type E = Extract<P[keyof P], number>;
  const toProto = new Map<S, E>();
  const fromProto = new Map<number, S>();
  for (const value of values) {
    const name = `${prefix}_${value.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
    const number = protoEnum[name];
    if (typeof number !== 'number') throw new Error(`proto enum ${prefix} has no member ${name} for '${value}'`);
    toProto.set(value, number as E);
    fromProto.set(number, value);
  }
  return {
    values,
    toProto: (value) => {
      const number = toProto.get(value);
      if (number === undefined) throw new Error(`'${value}' is not one of ${values.join(', ')}`);
      return number;
    },
    fromProto: (value, field = 'status') => {
      const s = fromProto.get(value);
      if (s === undefined) throw AppError.validation(`${field} must be one of ${values.join(', ')}.`);
      return s;
    },
  };
}
