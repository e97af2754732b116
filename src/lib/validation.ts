import type { TSchema } from '@sinclair/typebox'
import { Kind, OptionalKind } from '@sinclair/typebox'
import { isPlainObject, plural } from './values'

/** One problem in a 422 body, worded like FastAPI/Pydantic v2 so existing clients parse it unchanged. */
export type ValidationItem = {
  type: string
  loc: (string | number)[]
  msg: string
  input?: unknown
  ctx?: Record<string, unknown>
}

export type Loc = (string | number)[]

/** A model-level rule that failed (Pydantic's `value_error`). */
export function valueError(loc: Loc, message: string, input: unknown): ValidationItem {
  return { type: 'value_error', loc, msg: `Value error, ${message}`, input, ctx: { error: {} } }
}

export function missing(loc: Loc, parent: unknown): ValidationItem {
  return { type: 'missing', loc, msg: 'Field required', input: parent ?? null }
}

const quoteList = (values: unknown[]) => {
  const quoted = values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v)))
  return quoted.length <= 1 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`
}

/**
 * Query and path values arrive as strings. An integer in them is decimal digits, with a minus sign at most (no `0x1`,
 * `1e0`, `+1`, `1.0` or spaces); other numbers are parsed the way Pydantic's lax mode does; a boolean is `true` or
 * `false`. Elysia's own coercion reads them the same way (src/api/schemas.ts), so both validators agree.
 */
export type InputMode = 'json' | 'text'

export const DECIMAL_INTEGER = /^-?\d+$/
export const BOOLEAN_TEXT = /^(true|false)$/

function checkNumber(schema: TSchema, value: unknown, loc: Loc, mode: InputMode): ValidationItem[] {
  const integer = schema[Kind] === 'Integer'
  let n: number
  if (typeof value === 'number') n = value
  else if (
    typeof value === 'string' &&
    mode === 'text' &&
    (integer ? DECIMAL_INTEGER.test(value) : value.trim() !== '' && Number.isFinite(Number(value)))
  ) {
    n = Number(value)
  } else if (typeof value === 'string') {
    return [
      integer
        ? {
            type: 'int_parsing',
            loc,
            msg: 'Input should be a valid integer, unable to parse string as an integer',
            input: value,
          }
        : {
            type: 'float_parsing',
            loc,
            msg: 'Input should be a valid number, unable to parse string as a number',
            input: value,
          },
    ]
  } else {
    return [
      integer
        ? { type: 'int_type', loc, msg: 'Input should be a valid integer', input: value }
        : { type: 'float_type', loc, msg: 'Input should be a valid number', input: value },
    ]
  }
  if (integer && !Number.isInteger(n)) {
    return [
      {
        type: 'int_from_float',
        loc,
        msg: 'Input should be a valid integer, got a number with a fractional part',
        input: value,
      },
    ]
  }
  if (schema.minimum !== undefined && n < schema.minimum) {
    return [
      {
        type: 'greater_than_equal',
        loc,
        msg: `Input should be greater than or equal to ${schema.minimum}`,
        input: value,
        ctx: { ge: schema.minimum },
      },
    ]
  }
  if (schema.exclusiveMinimum !== undefined && n <= schema.exclusiveMinimum) {
    return [
      {
        type: 'greater_than',
        loc,
        msg: `Input should be greater than ${schema.exclusiveMinimum}`,
        input: value,
        ctx: { gt: schema.exclusiveMinimum },
      },
    ]
  }
  if (schema.maximum !== undefined && n > schema.maximum) {
    return [
      {
        type: 'less_than_equal',
        loc,
        msg: `Input should be less than or equal to ${schema.maximum}`,
        input: value,
        ctx: { le: schema.maximum },
      },
    ]
  }
  if (schema.exclusiveMaximum !== undefined && n >= schema.exclusiveMaximum) {
    return [
      {
        type: 'less_than',
        loc,
        msg: `Input should be less than ${schema.exclusiveMaximum}`,
        input: value,
        ctx: { lt: schema.exclusiveMaximum },
      },
    ]
  }
  return []
}

function checkString(schema: TSchema, value: unknown, loc: Loc): ValidationItem[] {
  if (typeof value !== 'string')
    return [{ type: 'string_type', loc, msg: 'Input should be a valid string', input: value }]
  const length = [...value].length
  if (schema.minLength !== undefined && length < schema.minLength) {
    return [
      {
        type: 'string_too_short',
        loc,
        msg: `String should have at least ${plural(schema.minLength, 'character')}`,
        input: value,
        ctx: { min_length: schema.minLength },
      },
    ]
  }
  if (schema.maxLength !== undefined && length > schema.maxLength) {
    return [
      {
        type: 'string_too_long',
        loc,
        msg: `String should have at most ${plural(schema.maxLength, 'character')}`,
        input: value,
        ctx: { max_length: schema.maxLength },
      },
    ]
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) {
    return [
      {
        type: 'string_pattern_mismatch',
        loc,
        msg: `String should match pattern '${schema.pattern}'`,
        input: value,
        ctx: { pattern: schema.pattern },
      },
    ]
  }
  return []
}

function checkBoolean(value: unknown, loc: Loc, mode: InputMode): ValidationItem[] {
  if (typeof value === 'boolean') return []
  if (mode === 'text' && typeof value === 'string' && BOOLEAN_TEXT.test(value)) return []
  if (typeof value === 'string')
    return [
      { type: 'bool_parsing', loc, msg: 'Input should be a valid boolean, unable to interpret input', input: value },
    ]
  return [{ type: 'bool_type', loc, msg: 'Input should be a valid boolean', input: value }]
}

function checkArray(schema: TSchema, value: unknown, loc: Loc, mode: InputMode): ValidationItem[] {
  if (!Array.isArray(value)) return [{ type: 'list_type', loc, msg: 'Input should be a valid list', input: value }]
  if (schema.minItems !== undefined && value.length < schema.minItems) {
    return [
      {
        type: 'too_short',
        loc,
        msg: `List should have at least ${plural(schema.minItems, 'item')} after validation, not ${value.length}`,
        input: value,
        ctx: { field_type: 'List', min_length: schema.minItems, actual_length: value.length },
      },
    ]
  }
  if (schema.maxItems !== undefined && value.length > schema.maxItems) {
    return [
      {
        type: 'too_long',
        loc,
        msg: `List should have at most ${plural(schema.maxItems, 'item')} after validation, not ${value.length}`,
        input: value,
        ctx: { field_type: 'List', max_length: schema.maxItems, actual_length: value.length },
      },
    ]
  }
  return value.flatMap((item, index) => checkValue(schema.items, item, [...loc, index], mode))
}

function checkObject(schema: TSchema, value: unknown, loc: Loc, mode: InputMode): ValidationItem[] {
  if (!isPlainObject(value)) {
    return [
      {
        type: 'model_attributes_type',
        loc,
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: value,
      },
    ]
  }
  const items: ValidationItem[] = []
  for (const [key, propertySchema] of Object.entries(schema.properties as Record<string, TSchema>)) {
    const propertyValue = value[key]
    if (propertyValue === undefined) {
      if (propertySchema[OptionalKind] !== 'Optional' && propertySchema.default === undefined)
        items.push(missing([...loc, key], value))
      continue
    }
    items.push(...checkValue(propertySchema, propertyValue, [...loc, key], mode))
  }
  return items
}

function checkDiscriminatedUnion(schema: TSchema, value: unknown, loc: Loc, mode: InputMode): ValidationItem[] {
  const tagField: string = schema.discriminator.propertyName
  const variants = schema.anyOf as TSchema[]
  const tags = variants.map((variant) => variant.properties[tagField].const as string)
  const expected = tags.map((tag) => `'${tag}'`).join(', ')
  if (!isPlainObject(value)) {
    return [
      {
        type: 'model_attributes_type',
        loc,
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: value,
      },
    ]
  }
  const tag = value[tagField]
  if (tag === undefined) {
    return [
      {
        type: 'union_tag_not_found',
        loc,
        msg: `Unable to extract tag using discriminator '${tagField}'`,
        input: value,
        ctx: { discriminator: `'${tagField}'` },
      },
    ]
  }
  const index = tags.indexOf(tag as string)
  if (index < 0) {
    return [
      {
        type: 'union_tag_invalid',
        loc,
        input: value,
        msg: `Input tag '${String(tag)}' found using '${tagField}' does not match any of the expected tags: ${expected}`,
        ctx: { discriminator: `'${tagField}'`, tag: String(tag), expected_tags: expected },
      },
    ]
  }
  return checkValue(variants[index], value, [...loc, tags[index]], mode)
}

const COERCION_FORMATS = new Set(['integer', 'numeric', 'boolean', 'number'])

function checkUnion(schema: TSchema, value: unknown, loc: Loc, mode: InputMode): ValidationItem[] {
  if (schema.discriminator?.propertyName) return checkDiscriminatedUnion(schema, value, loc, mode)
  // Elysia widens numbers and booleans in path and query schemas to `string (format: integer) | integer`; judge by the real type.
  const branches = (schema.anyOf as TSchema[]).filter(
    (branch, _index, all) => !(all.length > 1 && branch[Kind] === 'String' && COERCION_FORMATS.has(branch.format)),
  )
  const nonNull = branches.filter((branch) => branch[Kind] !== 'Null')
  if (value === null && nonNull.length < branches.length) return []
  if (nonNull.every((branch) => branch[Kind] === 'Literal')) {
    const allowed = nonNull.map((branch) => branch.const)
    if (allowed.includes(value)) return []
    const expected = quoteList(allowed)
    return [{ type: 'literal_error', loc, msg: `Input should be ${expected}`, input: value, ctx: { expected } }]
  }
  for (const branch of nonNull) {
    const branchItems = checkValue(branch, value, loc, mode)
    if (branchItems.length === 0) return []
    if (nonNull.length === 1) return branchItems
  }
  return checkValue(nonNull[0], value, loc, mode)
}

/** Validates `value` against a TypeBox schema and reports every problem the Pydantic way. Unknown properties are ignored. */
export function checkValue(schema: TSchema, value: unknown, loc: Loc, mode: InputMode = 'json'): ValidationItem[] {
  switch (schema[Kind]) {
    case 'Object':
      return checkObject(schema, value, loc, mode)
    case 'String':
      return checkString(schema, value, loc)
    case 'Integer':
    case 'Number':
      return checkNumber(schema, value, loc, mode)
    case 'Boolean':
      return checkBoolean(value, loc, mode)
    case 'Array':
      return checkArray(schema, value, loc, mode)
    case 'Union':
      return checkUnion(schema, value, loc, mode)
    case 'Literal':
      return checkUnion({ [Kind]: 'Union', anyOf: [schema] } as unknown as TSchema, value, loc, mode)
    case 'Null':
      return value === null ? [] : [{ type: 'none_required', loc, msg: 'Input should be None', input: value }]
    case 'Record':
      return isPlainObject(value)
        ? []
        : [{ type: 'dict_type', loc, msg: 'Input should be a valid dictionary', input: value }]
    default:
      return []
  }
}
