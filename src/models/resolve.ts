import type { AppContext } from '../context'
import type { ModelConfigurationRow, ProviderConnectionRow, StoredModelSection } from '../db/schema'
import { isPlainObject } from '../lib/values'
import { namesThisServer, THIS_SERVER_MESSAGE } from '../egress/policy'
import { valueError, type Loc, type ValidationItem } from '../lib/validation'
import { connectionOf, findConnectionRow } from './connections'
import { defaultConfigurationRow, findConfigurationRow } from './configurations'
import { withLlmFallback, type LlmSwitch } from './fallback'
import type { ModelConnection, ModelLog, ModelTimeouts } from './http'
import { createLlmClient } from './llm'
import { MODEL_PROVIDERS, type ModelService } from './providers'
import type { ModelOverridesInput } from './schemas'
import { createSttClient } from './stt'
import { createStreamingSttClient } from './stt-stream'
import { streamDialectOf } from './stt-stream-dialects'
import { createTtsClient } from './tts'
import { createRealtimeSession, type RealtimeSession } from './realtime'
import { FLITE_VOICES, type FliteVoice, type LlmClient, type ModelRef, type SttClient, type TtsClient } from './types'

/**
 * Which models a run uses: its `model_overrides` over the agent's pinned configuration over the organization default.
 * `model_configuration_uuid` picks the whole base configuration; an `llm`/`stt`/`tts` override then replaces the
 * connection and overlays the settings (on another connection the settings start again from that provider's defaults,
 * so a model name meant for one server is not sent to another). `llm_fallback` rules follow the conversation LLM.
 */

export type ResolvedService = {
  /** Null for the built-in voice. */
  connectionUuid: string | null
  connection: ModelConnection | null
  settings: Record<string, unknown>
}

export type ResolvedFallback = { afterMs: number; target: ResolvedService }

export type ResolvedModels = {
  /** The configuration the sections start from, if any. */
  configurationUuid: string | null
  configurationSource: 'run' | 'agent' | 'organization' | null
  llm: ResolvedService | null
  stt: ResolvedService | null
  tts: ResolvedService | null
  /** The knowledge base's query embeddings (src/knowledge/). */
  embeddings: ResolvedService | null
  /** A speech-to-speech model: voice calls run on it instead of stt → llm → tts (the llm still extracts and reviews). */
  realtime: ResolvedService | null
  fallback: ResolvedFallback[]
}

const SERVICES: ModelService[] = ['llm', 'stt', 'tts', 'embeddings', 'realtime']
const CONNECTION_SECTIONS = ['llm', 'stt', 'tts', 'realtime', 'embeddings'] as const

/**
 * Every uuid in `overrides` must name one of the organization's configurations or connections (another
 * organization's do not exist); fallback rules must be `no_output` with `after_ms`. `loc` locates `overrides`.
 */
export function modelOverridesProblems(
  ctx: AppContext,
  organizationId: number,
  overrides: ModelOverridesInput | null | undefined,
  loc: Loc,
): ValidationItem[] {
  if (!overrides) return []
  const items: ValidationItem[] = []
  const connectionExists = (uuid: string | undefined, at: Loc) => {
    if (uuid !== undefined && !findConnectionRow(ctx, organizationId, uuid)) {
      items.push(valueError(at, `provider connection ${uuid} does not exist in this organization`, uuid))
    }
  }
  const configuration = overrides.model_configuration_uuid
  if (configuration !== undefined && !findConfigurationRow(ctx, organizationId, configuration)) {
    items.push(
      valueError(
        [...loc, 'model_configuration_uuid'],
        `model configuration ${configuration} does not exist in this organization`,
        configuration,
      ),
    )
  }
  for (const section of CONNECTION_SECTIONS) {
    connectionExists(overrides[section]?.provider_connection_uuid, [...loc, section, 'provider_connection_uuid'])
  }
  for (const [index, rule] of (overrides.llm_fallback?.rules ?? []).entries()) {
    const at = [...loc, 'llm_fallback', 'rules', index]
    if (rule.condition.type !== 'no_output')
      items.push(valueError([...at, 'condition', 'type'], "the only condition is 'no_output'", rule.condition.type))
    else if (rule.condition.after_ms === undefined)
      items.push(valueError([...at, 'condition', 'after_ms'], 'after_ms is required for no_output', rule.condition))
    connectionExists(rule.target.provider_connection_uuid, [...at, 'target', 'provider_connection_uuid'])
  }
  return items
}

/** Why a run's models cannot be resolved (a configuration or connection deleted since the run was started). */
export class ModelResolutionError extends Error {}

function presetSettings(connection: ProviderConnectionRow, service: ModelService): Record<string, unknown> {
  return { ...(MODEL_PROVIDERS[connection.provider].defaults as Record<string, object | undefined>)[service] }
}

function requireConnection(ctx: AppContext, organizationId: number, uuid: string, what: string): ProviderConnectionRow {
  const row = findConnectionRow(ctx, organizationId, uuid)
  if (!row) throw new ModelResolutionError(`${what}: provider connection ${uuid} no longer exists`)
  // Saved before the check on save existed, or before this server moved to its address.
  if (namesThisServer(ctx, row.baseUrl))
    throw new ModelResolutionError(`${what}: provider connection '${row.name}': ${THIS_SERVER_MESSAGE}`)
  return row
}

function serviceOf(
  ctx: AppContext,
  organizationId: number,
  section: StoredModelSection,
  what: string,
): ResolvedService {
  if (section.builtin) return { connectionUuid: null, connection: null, settings: section.settings }
  const row = requireConnection(ctx, organizationId, section.provider_connection_uuid!, what)
  return { connectionUuid: row.uuid, connection: connectionOf(ctx, row), settings: section.settings }
}

function baseConfiguration(
  ctx: AppContext,
  organizationId: number,
  overrides: ModelOverridesInput | null,
  agentConfigurationUuid: string | null,
): { row: ModelConfigurationRow | undefined; source: ResolvedModels['configurationSource'] } {
  const pick = (uuid: string, source: 'run' | 'agent') => {
    const row = findConfigurationRow(ctx, organizationId, uuid)
    if (!row)
      throw new ModelResolutionError(
        `model configuration ${uuid} (${source === 'run' ? 'model_overrides' : "the agent's"}) no longer exists`,
      )
    return { row, source }
  }
  if (overrides?.model_configuration_uuid) return pick(overrides.model_configuration_uuid, 'run')
  if (agentConfigurationUuid) return pick(agentConfigurationUuid, 'agent')
  const row = defaultConfigurationRow(ctx, organizationId)
  return { row, source: row ? 'organization' : null }
}

/** Resolves what a run uses; throws ModelResolutionError when something it names is gone. */
export function resolveRunModels(
  ctx: AppContext,
  organizationId: number,
  {
    overrides,
    agentConfigurationUuid,
  }: { overrides: ModelOverridesInput | null; agentConfigurationUuid: string | null },
): ResolvedModels {
  const base = baseConfiguration(ctx, organizationId, overrides, agentConfigurationUuid)
  const resolved: ResolvedModels = {
    configurationUuid: base.row?.uuid ?? null,
    configurationSource: base.source,
    llm: null,
    stt: null,
    tts: null,
    embeddings: null,
    realtime: null,
    fallback: [],
  }
  for (const service of SERVICES) {
    const stored = base.row?.[service] ?? null
    let current = stored ? serviceOf(ctx, organizationId, stored, service) : null
    const override = overrides?.[service]
    if (override?.provider_connection_uuid && override.provider_connection_uuid !== current?.connectionUuid) {
      const row = requireConnection(
        ctx,
        organizationId,
        override.provider_connection_uuid,
        `model_overrides.${service}`,
      )
      current = {
        connectionUuid: row.uuid,
        connection: connectionOf(ctx, row),
        settings: { ...presetSettings(row, service), ...override.settings },
      }
    } else if (override?.settings && current) {
      current = { ...current, settings: { ...current.settings, ...override.settings } }
    }
    resolved[service] = current
  }
  resolved.fallback = (overrides?.llm_fallback?.rules ?? []).map((rule, index) => {
    const row = requireConnection(
      ctx,
      organizationId,
      rule.target.provider_connection_uuid,
      `model_overrides.llm_fallback.rules[${index}]`,
    )
    return {
      afterMs: rule.condition.after_ms ?? 0,
      target: {
        connectionUuid: row.uuid,
        connection: connectionOf(ctx, row),
        settings: { ...presetSettings(row, 'llm'), ...rule.target.settings },
      },
    }
  })
  return resolved
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined)
const number = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined

const refOf = (service: ResolvedService): ModelRef =>
  service.connection
    ? { service: service.connection.provider, model: text(service.settings.model) ?? '' }
    : { service: 'builtin', model: 'flite' }

/**
 * What `initial_context.runtime_configuration` records: provider and model per service (`llm_provider`, `llm_model`, …),
 * the configuration they came from and the fallback chain. Never a key or a URL.
 */
export function runtimeConfiguration(resolved: ResolvedModels): Record<string, unknown> {
  const entries: Record<string, unknown> = {
    model_configuration_uuid: resolved.configurationUuid,
    model_configuration_source: resolved.configurationSource,
  }
  for (const service of SERVICES) {
    const chosen = resolved[service]
    if (!chosen) continue
    const ref = refOf(chosen)
    entries[`${service}_provider`] = ref.service
    entries[`${service}_model`] = ref.model
    if ((service === 'tts' || service === 'realtime') && text(chosen.settings.voice))
      entries[`${service}_voice`] = chosen.settings.voice
  }
  if (resolved.fallback.length > 0) {
    entries.llm_fallback = resolved.fallback.map(({ afterMs, target }) => ({
      ...providerAndModel(refOf(target)),
      after_ms: afterMs,
    }))
  }
  return entries
}

const providerAndModel = (ref: ModelRef) => ({ provider: ref.service, model: ref.model })

export type RunClients = {
  /** The conversation LLM, behind the fallback chain when there is one; `ref` names the model that answered last. */
  llm: LlmClient
  /** Variable extraction and QA: the primary LLM alone (a whole JSON answer would trip a first-token timer). */
  extractionLlm: LlmClient
  /** Voice only. */
  stt: SttClient | null
  /** Voice only: the configured voice, else the built-in one; null when the call runs on a realtime model. */
  tts: TtsClient | null
  /** Voice with a `realtime` model: the call's speech-to-speech session (its `llm` is then the conversation LLM). */
  realtime: RealtimeSession | null
  /** Frees what the clients hold (the built-in voice's temporary directory). */
  close(): void
}

function llmOf(service: ResolvedService, log: ModelLog, timeouts?: Partial<ModelTimeouts>): LlmClient {
  const settings = service.settings
  const model = text(settings.model)
  if (!service.connection || !model) throw new ModelResolutionError('the LLM has no model server or model')
  return createLlmClient(
    service.connection,
    { model, temperature: number(settings.temperature), maxTokens: number(settings.max_tokens) },
    { log, timeouts },
  )
}

/**
 * Wraps the fallback chain so that `ref` is the model answering the current request: the engine reads `ref` when it
 * reports a completion's usage, which then counts against the model that produced it.
 */
function withAnsweringRef(
  primary: LlmClient,
  rules: ResolvedFallback[],
  log: ModelLog,
  onSwitch: (change: LlmSwitch) => void,
  timeouts?: Partial<ModelTimeouts>,
): LlmClient {
  if (rules.length === 0) return primary
  let answering = primary.ref
  const chain = withLlmFallback(
    primary,
    rules.map(({ afterMs, target }) => ({ noOutputAfterMs: afterMs, target: llmOf(target, log, timeouts) })),
    (change) => {
      answering = change.to
      onSwitch(change)
    },
  )
  return {
    get ref() {
      return answering
    },
    stream(request) {
      answering = primary.ref
      return chain.stream(request)
    },
    completeJson(request) {
      answering = primary.ref
      return chain.completeJson(request)
    },
  }
}

/**
 * What keeps a run from using its resolved models, or null: a run needs an LLM (a server and a model); a voice run also
 * speech to text. Run starts check it before dialling; the run session throws it.
 */
export function missingModels(resolved: ResolvedModels, voice: boolean): string | null {
  if (!resolved.llm) return 'no LLM is configured: create a model configuration (or make one the default)'
  if (!resolved.llm.connection || !text(resolved.llm.settings.model)) return 'the LLM has no model server or model'
  if (resolved.fallback.some(({ target }) => !text(target.settings.model))) return 'an llm_fallback target has no model'
  if (voice && resolved.realtime) {
    if (!resolved.realtime.connection || !text(resolved.realtime.settings.model))
      return 'the realtime model has no model server or model'
  } else if (voice && (!resolved.stt?.connection || !text(resolved.stt.settings.model))) {
    return 'no speech to text is configured: add an stt section to the model configuration'
  }
  return null
}

/**
 * The clients a run talks to; `voice` adds speech to text (required) and text to speech (the built-in voice by
 * default, which the voice layer above provides as `builtinVoice`).
 */
export async function createRunClients(
  resolved: ResolvedModels,
  options: {
    voice: boolean
    log: ModelLog
    onSwitch: (change: LlmSwitch) => void
    timeouts?: Partial<ModelTimeouts>
    builtinVoice: (voice: FliteVoice | undefined) => TtsClient
  },
): Promise<RunClients> {
  const missing = missingModels(resolved, options.voice)
  if (missing) throw new ModelResolutionError(missing)
  const { timeouts } = options
  const primary = llmOf(resolved.llm!, options.log, timeouts)
  const clients: RunClients = {
    llm: withAnsweringRef(primary, resolved.fallback, options.log, options.onSwitch, timeouts),
    extractionLlm: primary,
    stt: null,
    tts: null,
    realtime: null,
    close() {},
  }
  if (!options.voice) return clients
  if (resolved.realtime) {
    const realtime = realtimeSessionOf(resolved.realtime, timeouts)
    return { ...clients, llm: realtime.llm, realtime, close: () => realtime.close() }
  }
  const { stt, tts } = resolved
  const sttSettings = { model: text(stt!.settings.model)!, language: text(stt!.settings.language) }
  const dialect = streamDialectOf(stt!.settings.streaming)
  clients.stt = dialect
    ? createStreamingSttClient(stt!.connection!, sttSettings, dialect, { timeouts })
    : createSttClient(stt!.connection!, sttSettings, { timeouts })
  if (tts?.connection) {
    clients.tts = createTtsClient(
      tts.connection,
      {
        model: text(tts.settings.model) ?? '',
        voice: text(tts.settings.voice) ?? '',
        speed: number(tts.settings.speed),
      },
      { timeouts },
    )
  } else {
    const voice = text(tts?.settings.voice)
    clients.tts = options.builtinVoice(FLITE_VOICES.includes(voice as FliteVoice) ? (voice as FliteVoice) : undefined)
  }
  return clients
}

const REALTIME_TIMEOUTS: ModelTimeouts = { firstByteMs: 10_000, idleMs: 15_000, totalMs: 120_000 }

function realtimeSessionOf(service: ResolvedService, timeouts?: Partial<ModelTimeouts>): RealtimeSession {
  const { settings } = service
  return createRealtimeSession(
    service.connection!,
    {
      model: text(settings.model)!,
      voice: text(settings.voice) ?? 'alloy',
      instructions: text(settings.instructions),
      turnDetection: isPlainObject(settings.turn_detection) ? settings.turn_detection : undefined,
      transcriptionModel: text(settings.transcription_model),
    },
    { ...REALTIME_TIMEOUTS, ...timeouts },
  )
}

/** The run's stored `model_overrides`, or null. */
export const storedOverrides = (value: unknown): ModelOverridesInput | null =>
  isPlainObject(value) ? (value as ModelOverridesInput) : null
