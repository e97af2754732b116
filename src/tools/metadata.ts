import type { TSchema } from '@sinclair/typebox'
import { ToolDefinitionSchema } from './schemas'

/**
 * The fields of each tool type's `definition.config`, read from the schemas that check them (so the metadata cannot
 * drift from what a save accepts): name, JSON type, whether required, description, default and allowed values.
 */

export type ToolFieldMetadata = {
  name: string
  type: string
  required: boolean
  description: string | null
  default: unknown
  options: unknown[] | null
}

export type ToolTypeMetadata = { type: string; fields: ToolFieldMetadata[] }

/** A nullable or optional field's own schema (the non-null member of its union). */
function baseOf(schema: TSchema): TSchema {
  if (!Array.isArray(schema.anyOf)) return schema
  const members = (schema.anyOf as TSchema[]).filter((member) => member.type !== 'null')
  return members.length === 1 ? baseOf(members[0]) : schema
}

function fieldOf(name: string, schema: TSchema, required: boolean): ToolFieldMetadata {
  const base = baseOf(schema)
  const literals = Array.isArray(base.anyOf) ? (base.anyOf as TSchema[]).map((member) => member.const) : null
  const options = base.enum ?? (literals?.every((value) => value !== undefined) ? literals : null)
  return {
    name,
    type: options ? 'options' : String(base.type ?? 'object'),
    required,
    description: schema.description ?? base.description ?? null,
    default: schema.default ?? base.default ?? null,
    options,
  }
}

export function toolTypesMetadata(): { types: ToolTypeMetadata[] } {
  return {
    types: (ToolDefinitionSchema.anyOf as TSchema[]).map((member) => {
      const config = baseOf(member.properties.config)
      const required = new Set<string>(config.required ?? [])
      return {
        type: member.properties.type.const,
        fields: Object.entries((config.properties ?? {}) as Record<string, TSchema>).map(([name, schema]) =>
          fieldOf(name, schema, required.has(name)),
        ),
      }
    }),
  }
}
