import { describe, expect, test } from 'bun:test'
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import {
  EmbeddingsSettingsSchema,
  LlmSettingsSchema,
  RealtimeSettingsSchema,
  SttSettingsSchema,
  TtsSettingsSchema,
} from '../../src/models/schemas'
import { SERVICES } from '../../web/pages/model-settings'

/**
 * The console's model configuration form (web/pages/model-configuration.tsx) edits every setting the API takes, with
 * the API's own bounds and choices: a setting added to the API and not to the form fails here, not silently in use
 * (a sent section replaces the stored one, so a setting the form does not show is lost on save).
 */

const SCHEMAS = {
  llm: LlmSettingsSchema,
  stt: SttSettingsSchema,
  tts: TtsSettingsSchema,
  embeddings: EmbeddingsSettingsSchema,
  realtime: RealtimeSettingsSchema,
} as const

type Property = TSchema & { properties?: Record<string, Property>; minimum?: number; maximum?: number }

/** A settings schema's properties by key, an object's own ones as `outer.inner`. */
function propertiesOf(schema: { properties: Record<string, Property> }): Record<string, Property> {
  return Object.fromEntries(
    Object.entries(schema.properties).flatMap(([name, property]) =>
      property.type === 'object' && property.properties
        ? Object.entries(property.properties).map(([inner, value]) => [`${name}.${inner}`, value])
        : [[name, property]],
    ),
  )
}

describe('the model configuration form', () => {
  for (const { service, settings } of SERVICES) {
    const properties = propertiesOf(SCHEMAS[service])
    test(`shows every ${service} setting the API takes, with its bounds and choices`, () => {
      expect(settings.map((setting) => setting.key).toSorted()).toEqual(Object.keys(properties).toSorted())
      for (const setting of settings) {
        const property = properties[setting.key]
        if (setting.number)
          expect({ key: setting.key, ...setting.number }).toEqual({
            key: setting.key,
            min: property.minimum!,
            ...(property.maximum === undefined ? {} : { max: property.maximum }),
            ...(property.type === 'integer' ? { integer: true } : {}),
          })
        else expect([setting.key, ['number', 'integer'].includes(property.type)]).toEqual([setting.key, false])
        for (const option of setting.options ?? [])
          if (option.value)
            expect([setting.key, option.value, Value.Check(property, option.value)]).toEqual([
              setting.key,
              option.value,
              true,
            ])
      }
    })
  }
})
