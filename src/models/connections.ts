import { and, asc, eq } from 'drizzle-orm'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import {
  modelConfigurationConnections,
  modelConfigurations,
  providerConnections,
  type ProviderConnectionRow,
} from '../db/schema'
import { translateUniqueViolations } from '../db/tables'
import { applianceAddress, namesThisServer, THIS_SERVER_MESSAGE } from '../egress/policy'
import { bareHost, reachesThisMachine, targetsAppliance } from '../egress/network-policy'
import { decryptSecret, encryptSecret } from '../lib/encryption'
import { conflict, invalid, notFound, refused } from '../lib/errors'
import { isoNow } from '../lib/clock'
import { looksMasked, maskSecret } from '../lib/mask'
import { valueError, type ValidationItem } from '../lib/validation'
import type { ModelConnection } from './http'
import { listModels } from './list-models'
import { ModelServerError } from './types'
import { MODEL_PROVIDERS, type ModelProvider } from './providers'
import type {
  CreateProviderConnectionBody,
  ProviderConnectionCheck,
  ProviderConnectionList,
  ProviderConnectionView,
  UpdateProviderConnectionBody,
} from './schemas'

/**
 * Provider connections: an organization's named model servers (`{provider, base_url, api_key}`). The key is sealed at
 * rest and shown masked; a masked key sent back keeps the stored one. A connection a model configuration uses cannot
 * be deleted.
 */

type View = Static<typeof ProviderConnectionView>
type CreateInput = Static<typeof CreateProviderConnectionBody>
type UpdateInput = Static<typeof UpdateProviderConnectionBody>

export const CONNECTION_NOT_FOUND = 'Provider connection not found'

const duplicateName = (name: string) =>
  conflict(`A provider connection named '${name}' already exists in this organization. Pick a different name.`)

function view(ctx: AppContext, row: ProviderConnectionRow): View {
  return {
    uuid: row.uuid,
    name: row.name,
    provider: row.provider,
    base_url: row.baseUrl,
    api_key: row.sealedApiKey === null ? null : maskSecret(decryptSecret(ctx.masterKey, row.sealedApiKey)),
    last_check:
      row.lastCheckOk === null || row.lastCheckAt === null
        ? null
        : { ok: row.lastCheckOk, at: row.lastCheckAt, error: row.lastCheckError },
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

/** The organization's connection with this uuid; another organization's is not found. */
export function findConnectionRow(
  ctx: AppContext,
  organizationId: number,
  uuid: string,
): ProviderConnectionRow | undefined {
  return ctx.db
    .select()
    .from(providerConnections)
    .where(and(eq(providerConnections.uuid, uuid), eq(providerConnections.organizationId, organizationId)))
    .get()
}

function requireConnectionRow(ctx: AppContext, organizationId: number, uuid: string): ProviderConnectionRow {
  const row = findConnectionRow(ctx, organizationId, uuid)
  if (!row) throw notFound(CONNECTION_NOT_FOUND)
  return row
}

/** What the model clients need, key decrypted. Never log it. */
export function connectionOf(ctx: AppContext, row: ProviderConnectionRow): ModelConnection {
  return {
    provider: row.provider,
    baseUrl: row.baseUrl,
    apiKey: row.sealedApiKey === null ? null : decryptSecret(ctx.masterKey, row.sealedApiKey),
    thisMachine: { resolveHost: ctx.resolveHost, log: ctx.log, appliance: applianceAddress(ctx) },
  }
}

function baseUrlProblem(ctx: AppContext, baseUrl: string): string | null {
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch {
    return 'base_url must be an absolute http(s) URL'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'base_url must be an http or https URL'
  if (url.username || url.password) return 'base_url must not carry credentials: use api_key'
  // An empty query or fragment (`…/admin?`) parses to none, yet would swallow the path every request appends.
  if (/[?#]/.test(baseUrl)) return 'base_url must not have a query or fragment'
  if (namesThisServer(ctx, baseUrl)) return `base_url: ${THIS_SERVER_MESSAGE}`
  return null
}

function connectionProblems(
  ctx: AppContext,
  provider: ModelProvider,
  baseUrl: string | null,
  apiKey: string | null,
  sent: { base_url?: string; api_key?: string | null },
): ValidationItem[] {
  const items: ValidationItem[] = []
  const urlProblem =
    baseUrl === null
      ? `${provider} has no usual address (speaches listens on port 8000 by default, as Ringbase does): give the base_url of your server`
      : baseUrlProblem(ctx, baseUrl)
  if (urlProblem) items.push(valueError(['body', 'base_url'], urlProblem, sent.base_url ?? baseUrl))
  if (!apiKey && MODEL_PROVIDERS[provider].apiKey === 'required') {
    items.push(valueError(['body', 'api_key'], `${provider} connections need an API key`, sent.api_key ?? null))
  }
  // A mask copied from elsewhere or edited would be stored as asterisks (the exact mask of the stored key is resolved before).
  if (apiKey !== null && apiKey === sent.api_key && looksMasked(apiKey)) {
    items.push(
      valueError(
        ['body', 'api_key'],
        'api_key is masked but not the mask of the stored key: send the key in clear',
        apiKey,
      ),
    )
  }
  return items
}

const writeConnection = <T>(name: string, write: () => T): T =>
  translateUniqueViolations('provider_connections', [[['organization_id', 'name'], () => duplicateName(name)]], write)

const withoutTrailingSlash = (url: string) => url.trim().replace(/\/+$/, '')

export function listConnections(ctx: AppContext, organizationId: number): Static<typeof ProviderConnectionList> {
  const rows = ctx.db
    .select()
    .from(providerConnections)
    .where(eq(providerConnections.organizationId, organizationId))
    .orderBy(asc(providerConnections.id))
    .all()
  return { connections: rows.map((row) => view(ctx, row)) }
}

export const getConnection = (ctx: AppContext, organizationId: number, uuid: string): View =>
  view(ctx, requireConnectionRow(ctx, organizationId, uuid))

export function createConnection(ctx: AppContext, organizationId: number, body: CreateInput): View {
  const provider = body.provider as ModelProvider
  const sentOrDefault = body.base_url ?? MODEL_PROVIDERS[provider].defaultBaseUrl
  const baseUrl = sentOrDefault === null ? null : withoutTrailingSlash(sentOrDefault)
  const apiKey = body.api_key || null
  const items = connectionProblems(ctx, provider, baseUrl, apiKey, body)
  if (items.length > 0 || baseUrl === null) throw invalid(items)
  const now = isoNow(ctx.clock)
  const row = writeConnection(body.name, () =>
    ctx.db
      .insert(providerConnections)
      .values({
        uuid: crypto.randomUUID(),
        organizationId,
        name: body.name,
        provider,
        baseUrl,
        sealedApiKey: apiKey === null ? null : encryptSecret(ctx.masterKey, apiKey),
        createdAt: now,
        updatedAt: now,
      })
      .returning()
      .get(),
  )
  ctx.log.info({ organizationId, connection: row.uuid, provider }, 'provider connection created')
  return view(ctx, row)
}

/** Partial: only sent fields change; the provider cannot; `api_key: null` removes the key. */
export function updateConnection(ctx: AppContext, organizationId: number, uuid: string, body: UpdateInput): View {
  const row = requireConnectionRow(ctx, organizationId, uuid)
  if (body.provider !== undefined && body.provider !== row.provider)
    throw refused('Provider cannot be changed; create a new connection instead.')
  const stored = row.sealedApiKey === null ? null : decryptSecret(ctx.masterKey, row.sealedApiKey)
  const apiKey =
    body.api_key === undefined || (stored !== null && body.api_key === maskSecret(stored))
      ? stored
      : body.api_key || null
  const baseUrl = body.base_url === undefined ? row.baseUrl : withoutTrailingSlash(body.base_url)
  const items = connectionProblems(ctx, row.provider, baseUrl, apiKey, body)
  // The stored key would go, as credentials, to an address the request names.
  if (stored !== null && apiKey === stored && body.api_key !== stored && baseUrl !== row.baseUrl) {
    items.push(
      valueError(
        ['body', 'api_key'],
        'base_url changes: send the api_key again in clear (a stored key never follows a new address)',
        body.api_key ?? null,
      ),
    )
  }
  if (items.length > 0) throw invalid(items)
  const name = body.name ?? row.name
  const updated = writeConnection(name, () =>
    ctx.db
      .update(providerConnections)
      .set({
        name,
        baseUrl,
        sealedApiKey:
          apiKey === stored ? row.sealedApiKey : apiKey === null ? null : encryptSecret(ctx.masterKey, apiKey),
        updatedAt: isoNow(ctx.clock),
      })
      .where(eq(providerConnections.id, row.id))
      .returning()
      .get(),
  )
  ctx.log.info({ organizationId, connection: uuid, keyChanged: apiKey !== stored }, 'provider connection updated')
  return view(ctx, updated)
}

export function deleteConnection(ctx: AppContext, organizationId: number, uuid: string): void {
  const row = requireConnectionRow(ctx, organizationId, uuid)
  const users = ctx.db
    .select({ name: modelConfigurations.name })
    .from(modelConfigurationConnections)
    .innerJoin(modelConfigurations, eq(modelConfigurations.id, modelConfigurationConnections.configurationId))
    .where(eq(modelConfigurationConnections.connectionId, row.id))
    .all()
  if (users.length > 0) {
    throw conflict(
      `Provider connection '${row.name}' is used by model configuration ${users.map(({ name }) => `'${name}'`).join(', ')}; change those first.`,
    )
  }
  ctx.db.delete(providerConnections).where(eq(providerConnections.id, row.id)).run()
  ctx.log.info({ organizationId, connection: uuid }, 'provider connection deleted')
}

/** Where a connection's server is, as the check must know it: this Ringbase server itself, elsewhere on this machine, or not. */
async function whereServerIs(ctx: AppContext, baseUrl: string): Promise<'this_server' | 'this_machine' | 'elsewhere'> {
  const url = new URL(baseUrl)
  const resolved = await ctx.resolveHost(bareHost(url.hostname)).catch(() => [])
  if (targetsAppliance(url, resolved, applianceAddress(ctx))) return 'this_server'
  return reachesThisMachine(url, resolved) ? 'this_machine' : 'elsewhere'
}

/**
 * Asks the server for its model list: what it found, or the error (its message never contains the key). For a server
 * on this machine the error does not tell a refused connection from an answer (the reason is in the server's log): the
 * check must not tell a caller which of this machine's ports are open. This Ringbase server itself is never asked.
 */
export async function checkConnection(
  ctx: AppContext,
  organizationId: number,
  uuid: string,
): Promise<Static<typeof ProviderConnectionCheck>> {
  const result = await checkedConnection(ctx, organizationId, uuid)
  ctx.db
    .update(providerConnections)
    .set({ lastCheckOk: result.ok, lastCheckAt: isoNow(ctx.clock), lastCheckError: result.error })
    .where(and(eq(providerConnections.uuid, uuid), eq(providerConnections.organizationId, organizationId)))
    .run()
  return result
}

async function checkedConnection(
  ctx: AppContext,
  organizationId: number,
  uuid: string,
): Promise<Static<typeof ProviderConnectionCheck>> {
  const row = requireConnectionRow(ctx, organizationId, uuid)
  const where = await whereServerIs(ctx, row.baseUrl)
  if (where === 'this_server') return { ok: false, models: [], error: THIS_SERVER_MESSAGE }
  try {
    const models = await listModels(connectionOf(ctx, row))
    ctx.modelHealth.noteUp(row.uuid)
    return { ok: true, models, error: null }
  } catch (error) {
    ctx.log.info({ organizationId, connection: uuid, err: error }, 'provider connection check failed')
    if (error instanceof ModelServerError) ctx.modelHealth.noteDown(row.uuid, error.kind)
    const reason = error instanceof Error ? error.message : String(error)
    return { ok: false, models: [], error: where === 'this_machine' ? ON_THIS_MACHINE_FAILED : reason }
  }
}

const ON_THIS_MACHINE_FAILED =
  'No model list from this server. It is on this machine, so why (not listening, or the answer) is told only ' +
  'in the Ringbase log, not to API callers'
