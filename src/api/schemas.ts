import { t } from 'elysia'

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

export const IdParam = (name: string) => t.Object({ [name]: t.Integer() })

/** Error responses every authenticated route can answer with. */
export const authErrors = { 401: ErrorDetail, 403: ErrorDetail, 422: ValidationErrorBody } as const
