import { FormatRegistry } from '@sinclair/typebox'
import { t } from 'elysia'
import { DECIMAL_INTEGER } from '../lib/validation'

/** Response shapes shared by every module's OpenAPI description. */
export const ErrorDetail = t.Object({ detail: t.String() }, { description: 'Error with a human-readable message' })

export const ValidationErrorBody = t.Object(
  {
    detail: t.Array(
      t.Object({
        type: t.String(),
        loc: t.Array(t.Union([t.String(), t.Integer()])),
        msg: t.String(),
        input: t.Optional(t.Unknown()),
        ctx: t.Optional(t.Record(t.String(), t.Unknown())),
      }),
    ),
  },
  { description: 'Validation error (one item per problem)' },
)

export const SuccessMessage = t.Object({ success: t.Boolean(), message: t.String() })

// Elysia reads integer text in paths and queries with `+value`: `0x1`, `1e0`, `+1`, `1.0` and ` 1` would all be 1.
// Integer text is decimal digits, as the 422 checker (lib/validation.ts) reads it.
FormatRegistry.Set('integer', (value) => DECIMAL_INTEGER.test(value))

/** Every integer id in a path: decimal digits only, within what a JavaScript number holds exactly. */
export const PathId = t.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

export const IdParam = (name: string) => t.Object({ [name]: PathId })

/** Error responses every authenticated route can answer with. */
export const authErrors = { 401: ErrorDetail, 403: ErrorDetail, 422: ValidationErrorBody } as const
