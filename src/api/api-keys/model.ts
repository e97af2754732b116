import { t } from 'elysia'

export const ApiKeyScopeSchema = t.Union([t.Literal('admin'), t.Literal('trigger')])

export const ApiKeyView = t.Object({
  id: t.Integer(),
  name: t.String(),
  key_prefix: t.String(),
  scope: ApiKeyScopeSchema,
  is_active: t.Boolean(),
  created_at: t.String({ format: 'date-time' }),
  last_used_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  archived_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
})

export const CreateApiKeyBody = t.Object({
  name: t.String({ minLength: 1, maxLength: 255 }),
  scope: t.Optional(ApiKeyScopeSchema),
})

export const CreatedApiKey = t.Object({
  id: t.Integer(),
  name: t.String(),
  key_prefix: t.String(),
  scope: ApiKeyScopeSchema,
  api_key: t.String({ description: 'The full key. Shown only in this response.' }),
  created_at: t.String({ format: 'date-time' }),
})

export const ListApiKeysQuery = t.Object({ include_archived: t.Optional(t.Boolean({ default: false })) })
