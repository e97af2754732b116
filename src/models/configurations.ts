import { and, asc, eq } from 'drizzle-orm'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { liveAgentVersions } from '../db/agent-versions'
import {
  modelConfigurationConnections,
  modelConfigurations,
  type ModelConfigurationRow,
  type StoredModelSection,
} from '../db/schema'
import { transaction } from '../db/transaction'
import { translateUniqueViolations } from '../db/tables'
import { conflict, invalid, notFound } from '../lib/errors'
import { isoNow } from '../lib/clock'
import { valueError, type Loc, type ValidationItem } from '../lib/validation'
import { findConnectionRow } from './connections'
import { MODEL_PROVIDERS, type ModelService } from './providers'
import type {
  CreateModelConfigurationBody,
  ModelConfigurationList,
  ModelConfigurationView,
  UpdateModelConfigurationBody,
} from './schemas'

/**
 * Model configurations: which connection and settings an organization's runs use for each service (`llm`, `stt`,
 * `tts`, `embeddings`, `realtime`; `tts` may be the built-in voice). At most one is the organization default; an agent may pin one in
 * `workflow_configurations.model_configuration_uuid`.
 */

type View = Static<typeof ModelConfigurationView>
type CreateInput = Static<typeof CreateModelConfigurationBody>
type UpdateInput = Static<typeof UpdateModelConfigurationBody>
type SectionInput = { provider_connection_uuid?: string; builtin?: true; settings?: Record<string, unknown> }

export const CONFIGURATION_NOT_FOUND = 'Model configuration not found'

export const BUILTIN_TTS_VOICE = 'slt'

const duplicateName = (name: string) =>
  conflict(`A model configuration named '${name}' already exists in this organization. Pick a different name.`)

function view(row: ModelConfigurationRow): View {
  return {
    uuid: row.uuid,
    name: row.name,
    is_default: row.isDefault,
    llm: row.llm,
    stt: row.stt,
    tts: row.tts,
    embeddings: row.embeddings,
    realtime: row.realtime ?? null,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

export function findConfigurationRow(
  ctx: AppContext,
  organizationId: number,
  uuid: string,
): ModelConfigurationRow | undefined {
  return ctx.db
    .select()
    .from(modelConfigurations)
    .where(and(eq(modelConfigurations.uuid, uuid), eq(modelConfigurations.organizationId, organizationId)))
    .get()
}

export function defaultConfigurationRow(ctx: AppContext, organizationId: number): ModelConfigurationRow | undefined {
  return ctx.db
    .select()
    .from(modelConfigurations)
    .where(and(eq(modelConfigurations.organizationId, organizationId), eq(modelConfigurations.isDefault, true)))
    .get()
}

function requireConfigurationRow(ctx: AppContext, organizationId: number, uuid: string): ModelConfigurationRow {
  const row = findConfigurationRow(ctx, organizationId, uuid)
  if (!row) throw notFound(CONFIGURATION_NOT_FOUND)
  return row
}

/** The preset's default model (and voice) for a service fill what the section leaves out. */
function presetDefaults(provider: keyof typeof MODEL_PROVIDERS, service: ModelService): Record<string, string> {
  return (MODEL_PROVIDERS[provider].defaults as Record<string, Record<string, string> | undefined>)[service] ?? {}
}

type NormalizedSection = { section: StoredModelSection; connectionId: number | null }

/**
 * The section as stored (settings with the preset's defaults), with the connection it uses, or the 422 items: an
 * unknown (or another organization's) connection, a model or voice neither sent nor known for the provider.
 */
function normalizeSection(
  ctx: AppContext,
  organizationId: number,
  service: ModelService,
  input: SectionInput,
  loc: Loc,
  items: ValidationItem[],
): NormalizedSection | null {
  const settings = { ...input.settings }
  if (input.builtin)
    return { section: { builtin: true, settings: { voice: BUILTIN_TTS_VOICE, ...settings } }, connectionId: null }
  const uuid = input.provider_connection_uuid!
  const connection = findConnectionRow(ctx, organizationId, uuid)
  if (!connection) {
    items.push(
      valueError(
        [...loc, 'provider_connection_uuid'],
        `provider connection ${uuid} does not exist in this organization`,
        uuid,
      ),
    )
    return null
  }
  const filled = { ...presetDefaults(connection.provider, service), ...settings }
  const required = service === 'tts' || service === 'realtime' ? ['model', 'voice'] : ['model']
  for (const field of required.filter((name) => typeof filled[name] !== 'string' || filled[name] === '')) {
    items.push(
      valueError(
        [...loc, 'settings', field],
        `${field} is required: ${connection.provider} has no default ${service} ${field}`,
        settings[field] ?? null,
      ),
    )
  }
  return { section: { provider_connection_uuid: uuid, settings: filled }, connectionId: connection.id }
}

type Sections = {
  llm: NormalizedSection
  stt: NormalizedSection | null
  tts: NormalizedSection | null
  embeddings: NormalizedSection | null
  realtime: NormalizedSection | null
}

function normalizeSections(
  ctx: AppContext,
  organizationId: number,
  input: Record<'stt' | 'tts' | 'embeddings' | 'realtime', SectionInput | null> & { llm: SectionInput },
): Sections {
  const items: ValidationItem[] = []
  const each = (service: ModelService, value: SectionInput | null) =>
    value === null ? null : normalizeSection(ctx, organizationId, service, value, ['body', service], items)
  const sections = {
    llm: each('llm', input.llm),
    stt: each('stt', input.stt),
    tts: each('tts', input.tts),
    embeddings: each('embeddings', input.embeddings),
    realtime: each('realtime', input.realtime),
  }
  if (items.length > 0) throw invalid(items)
  return sections as Sections
}

function linkConnections(ctx: AppContext, configurationId: number, sections: Sections): void {
  ctx.db
    .delete(modelConfigurationConnections)
    .where(eq(modelConfigurationConnections.configurationId, configurationId))
    .run()
  const ids = [
    ...new Set(
      [sections.llm, sections.stt, sections.tts, sections.embeddings, sections.realtime].flatMap((section) =>
        section?.connectionId == null ? [] : [section.connectionId],
      ),
    ),
  ]
  if (ids.length > 0)
    ctx.db
      .insert(modelConfigurationConnections)
      .values(ids.map((connectionId) => ({ configurationId, connectionId })))
      .run()
}

function clearDefault(ctx: AppContext, organizationId: number): void {
  ctx.db
    .update(modelConfigurations)
    .set({ isDefault: false })
    .where(and(eq(modelConfigurations.organizationId, organizationId), eq(modelConfigurations.isDefault, true)))
    .run()
}

const writeConfiguration = <T>(name: string, write: () => T): T =>
  translateUniqueViolations(
    'model_configurations',
    [
      [['organization_id', 'name'], () => duplicateName(name)],
      [['organization_id'], () => conflict('Another configuration became the default at the same time; try again.')],
    ],
    write,
  )

export function listConfigurations(ctx: AppContext, organizationId: number): Static<typeof ModelConfigurationList> {
  const rows = ctx.db
    .select()
    .from(modelConfigurations)
    .where(eq(modelConfigurations.organizationId, organizationId))
    .orderBy(asc(modelConfigurations.id))
    .all()
  return { configurations: rows.map(view) }
}

export const getConfiguration = (ctx: AppContext, organizationId: number, uuid: string): View =>
  view(requireConfigurationRow(ctx, organizationId, uuid))

export function createConfiguration(ctx: AppContext, organizationId: number, body: CreateInput): View {
  const sections = normalizeSections(ctx, organizationId, {
    llm: body.llm,
    stt: body.stt ?? null,
    tts: body.tts ?? null,
    embeddings: body.embeddings ?? null,
    realtime: body.realtime ?? null,
  })
  const now = isoNow(ctx.clock)
  const row = writeConfiguration(body.name, () =>
    transaction(ctx, () => {
      const isDefault = body.is_default ?? !defaultConfigurationRow(ctx, organizationId)
      if (isDefault) clearDefault(ctx, organizationId)
      const created = ctx.db
        .insert(modelConfigurations)
        .values({
          uuid: crypto.randomUUID(),
          organizationId,
          name: body.name,
          isDefault,
          llm: sections.llm.section,
          stt: sections.stt?.section ?? null,
          tts: sections.tts?.section ?? null,
          embeddings: sections.embeddings?.section ?? null,
          realtime: sections.realtime?.section ?? null,
          createdAt: now,
          updatedAt: now,
        })
        .returning()
        .get()
      linkConnections(ctx, created.id, sections)
      return created
    }),
  )
  ctx.log.info({ organizationId, configuration: row.uuid, isDefault: row.isDefault }, 'model configuration created')
  return view(row)
}

/** Partial: only the sent fields change; a sent section replaces the stored one (null removes stt or tts). */
export function updateConfiguration(ctx: AppContext, organizationId: number, uuid: string, body: UpdateInput): View {
  const row = requireConfigurationRow(ctx, organizationId, uuid)
  const sections = normalizeSections(ctx, organizationId, {
    llm: body.llm ?? row.llm,
    stt: body.stt === undefined ? row.stt : body.stt,
    tts: body.tts === undefined ? row.tts : body.tts,
    embeddings: body.embeddings === undefined ? row.embeddings : body.embeddings,
    realtime: body.realtime === undefined ? (row.realtime ?? null) : body.realtime,
  })
  const name = body.name ?? row.name
  const updated = writeConfiguration(name, () =>
    transaction(ctx, () => {
      if (body.is_default === true) clearDefault(ctx, organizationId)
      const saved = ctx.db
        .update(modelConfigurations)
        .set({
          name,
          isDefault: body.is_default ?? row.isDefault,
          llm: sections.llm.section,
          stt: sections.stt?.section ?? null,
          tts: sections.tts?.section ?? null,
          embeddings: sections.embeddings?.section ?? null,
          realtime: sections.realtime?.section ?? null,
          updatedAt: isoNow(ctx.clock),
        })
        .where(eq(modelConfigurations.id, row.id))
        .returning()
        .get()
      linkConnections(ctx, row.id, sections)
      return saved
    }),
  )
  ctx.log.info({ organizationId, configuration: uuid }, 'model configuration updated')
  return view(updated)
}

/** Names of the organization's agents whose draft or published version pins the configuration. */
function agentsPinning(ctx: AppContext, organizationId: number, uuid: string): string[] {
  const versions = liveAgentVersions(ctx, organizationId)
  return [
    ...new Set(
      versions.filter(({ configurations }) => configurations.model_configuration_uuid === uuid).map(({ name }) => name),
    ),
  ]
}

export function deleteConfiguration(ctx: AppContext, organizationId: number, uuid: string): void {
  const row = requireConfigurationRow(ctx, organizationId, uuid)
  const agents = agentsPinning(ctx, organizationId, uuid)
  if (agents.length > 0) {
    throw conflict(
      `Model configuration '${row.name}' is pinned by agent ${agents.map((name) => `'${name}'`).join(', ')}; change those first.`,
    )
  }
  ctx.db.delete(modelConfigurations).where(eq(modelConfigurations.id, row.id)).run()
  ctx.log.info({ organizationId, configuration: uuid }, 'model configuration deleted')
}

/** The 422 item when an agent's `workflow_configurations.model_configuration_uuid` is not one of the organization's. */
export function modelConfigurationPinProblems(
  ctx: AppContext,
  organizationId: number,
  configurations: Record<string, unknown>,
  loc: Loc,
): ValidationItem[] {
  const pinned = configurations.model_configuration_uuid
  if (pinned === undefined || pinned === null) return []
  const at = [...loc, 'model_configuration_uuid']
  if (typeof pinned !== 'string') return [valueError(at, 'model_configuration_uuid must be a UUID string', pinned)]
  if (findConfigurationRow(ctx, organizationId, pinned)) return []
  return [valueError(at, `model configuration ${pinned} does not exist in this organization`, pinned)]
}
