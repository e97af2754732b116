import type { TSchema } from '@sinclair/typebox'
import { invalid } from '../lib/errors'
import { checkValue, type Loc, type ValidationItem } from '../lib/validation'
import { isPlainObject } from '../lib/values'
import {
  CredentialDescription,
  CredentialName,
  CredentialTypeSchema,
  type CreateCredentialInput,
  type UpdateCredentialInput,
} from './schemas'
import { CREDENTIAL_TYPES, type CredentialType } from '../db/schema/credentials'
import type { CredentialData } from './types'

/**
 * Validation of credential bodies. Problems inside `credential_data` never echo the value (`input` left out), so a
 * secret sent with a typo does not come back in the 422 body.
 */

const VALUE_MAX_LENGTH = 4096
const HEADER_NAME_MAX_LENGTH = 256
/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
/** Headers the HTTP client or our own delivery headers own; a credential setting them would break or spoof requests. */
const RESERVED_HEADER = /^(host|content-length|transfer-encoding|connection|x-ringbase-.*)$/i
const UNSAFE_IN_VALUE = /[\r\n\0]/

type FieldKind = 'value' | 'username' | 'header_name'
type FieldRule = { field: string; kind: FieldKind; optional?: boolean; mayBeEmpty?: boolean }

const FIELD_RULES: Record<CredentialType, FieldRule[]> = {
  bearer_token: [{ field: 'token', kind: 'value' }],
  api_key: [
    { field: 'api_key', kind: 'value' },
    { field: 'header_name', kind: 'header_name', optional: true },
  ],
  basic_auth: [
    { field: 'username', kind: 'username' },
    { field: 'password', kind: 'value', mayBeEmpty: true },
  ],
  custom_header: [
    { field: 'header_name', kind: 'header_name' },
    { field: 'header_value', kind: 'value' },
  ],
}

const problem = (type: string, loc: Loc, msg: string, ctx?: Record<string, unknown>): ValidationItem =>
  ctx ? { type, loc, msg, ctx } : { type, loc, msg }

function fieldProblem(rule: FieldRule, value: string, loc: Loc): ValidationItem | null {
  const maxLength = rule.kind === 'header_name' ? HEADER_NAME_MAX_LENGTH : VALUE_MAX_LENGTH
  if (value.length > maxLength) {
    return problem('string_too_long', loc, `String should have at most ${maxLength} characters`, {
      max_length: maxLength,
    })
  }
  if (value === '' && !rule.mayBeEmpty)
    return problem('string_too_short', loc, 'String should have at least 1 character', { min_length: 1 })
  if (rule.kind === 'header_name') {
    if (!HEADER_NAME.test(value))
      return problem(
        'value_error',
        loc,
        "Value error, a header name may only contain letters, digits and !#$%&'*+-.^_`|~",
      )
    if (RESERVED_HEADER.test(value))
      return problem('value_error', loc, `Value error, the header ${value} cannot be set by a credential`)
    return null
  }
  if (UNSAFE_IN_VALUE.test(value))
    return problem('value_error', loc, 'Value error, line breaks and NUL characters are not allowed')
  if (rule.kind === 'username' && value.includes(':'))
    return problem('value_error', loc, 'Value error, a Basic auth username cannot contain a colon')
  return null
}

/** The fields of `type` from `data`, checked; unknown fields are dropped, an empty optional one counts as absent. */
function checkCredentialData(
  type: CredentialType,
  data: Record<string, unknown>,
  loc: Loc,
): { items: ValidationItem[]; data: CredentialData } {
  const items: ValidationItem[] = []
  const clean: Record<string, string> = {}
  for (const rule of FIELD_RULES[type]) {
    const value = data[rule.field]
    const at = [...loc, rule.field]
    if (value === undefined || value === null || (rule.optional && value === '')) {
      if (!rule.optional) items.push(problem('missing', at, 'Field required'))
      continue
    }
    if (typeof value !== 'string') {
      items.push(problem('string_type', at, 'Input should be a valid string'))
      continue
    }
    const found = fieldProblem(rule, value, at)
    if (found) items.push(found)
    else clean[rule.field] = value
  }
  return { items, data: clean as CredentialData }
}

/** `checkValue` for one top-level field that is present (a missing one is reported without echoing the body). */
function checkField(
  body: Record<string, unknown>,
  field: string,
  schema: TSchema,
  required: boolean,
): ValidationItem[] {
  if (body[field] === undefined) return required ? [problem('missing', ['body', field], 'Field required')] : []
  return checkValue(schema, body[field], ['body', field])
}

function requireObject(body: unknown): Record<string, unknown> {
  if (isPlainObject(body)) return body
  throw invalid([
    problem('model_attributes_type', ['body'], 'Input should be a valid dictionary or object to extract fields from'),
  ])
}

/** Problems of the top-level fields; `partial` (an update) requires none. */
function shapeItems(body: Record<string, unknown>, partial: boolean): ValidationItem[] {
  const items = [
    ...checkField(body, 'name', CredentialName, !partial),
    ...checkField(body, 'description', CredentialDescription, false),
    ...checkField(body, 'credential_type', CredentialTypeSchema, !partial),
  ]
  if (body.credential_data === undefined && !partial)
    items.push(problem('missing', ['body', 'credential_data'], 'Field required'))
  if (body.credential_data !== undefined && !isPlainObject(body.credential_data)) {
    items.push(problem('dict_type', ['body', 'credential_data'], 'Input should be a valid dictionary'))
  }
  return items
}

/**
 * The checks the route's body schema would make, reported without echoing `credential_data` (a missing `name` would
 * otherwise come back with the whole body as its input). Routes run it before the schema does.
 */
export function checkCredentialBodyShape(sent: unknown, partial: boolean): void {
  const items = shapeItems(requireObject(sent), partial)
  if (items.length > 0) throw invalid(items)
}

const trimmedName = (body: Record<string, unknown>) =>
  typeof body.name === 'string' ? { ...body, name: body.name.trim() } : body

/** The checked body; the name comes back trimmed and the data with only its type's fields. */
function validBody(sent: unknown, partial: boolean, storedType?: CredentialType) {
  const body = trimmedName(requireObject(sent))
  const items = shapeItems(body, partial)
  const type = body.credential_type ?? storedType
  let data: CredentialData | undefined
  if (body.credential_data === undefined) {
    // The stored secret has the old type's fields.
    if (partial && type !== storedType)
      items.push(
        problem(
          'missing',
          ['body', 'credential_data'],
          'Field required: a new credential_type needs its credential_data',
        ),
      )
  } else if (isPlainObject(body.credential_data) && CREDENTIAL_TYPES.includes(type as CredentialType)) {
    const checked = checkCredentialData(type as CredentialType, body.credential_data, ['body', 'credential_data'])
    items.push(...checked.items)
    data = checked.data
  }
  if (items.length > 0) throw invalid(items)
  return { body, data }
}

export function validCreateBody(sent: unknown): CreateCredentialInput & { credential_data: CredentialData } {
  const { body, data } = validBody(sent, false)
  return { ...(body as CreateCredentialInput), credential_data: data! }
}

/** Checked against the type the credential will have; credential_data is left out when it was. */
export function validUpdateBody(
  sent: unknown,
  storedType: CredentialType,
): UpdateCredentialInput & { credential_data?: CredentialData } {
  const { body, data } = validBody(sent, true, storedType)
  return { ...(body as UpdateCredentialInput), credential_data: data }
}
