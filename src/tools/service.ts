import { and, asc, eq, inArray } from 'drizzle-orm'
import type { DefinitionError, AgentDefinition } from '../definition/definition'
import type { AppContext } from '../context'
import { tools, type ToolRow } from '../db/schema'
import { readCredential } from '../credentials/store'
import { isoNow } from '../lib/clock'
import { invalid, notFound } from '../lib/errors'
import { valueError, type ValidationItem } from '../lib/validation'
import { namesThisServer, THIS_SERVER_MESSAGE } from '../egress/policy'
import { checkDefinition, keepDiscovery } from './definitions'
import { toolRecordingProblem } from './recordings'
import { toolFunctionName } from './functions'
import {
  TOOL_TYPES,
  type AgentTool,
  type CreateToolInput,
  type ToolCategory,
  type ToolDefinition,
  type ToolStatus,
  type ToolViewShape,
  type UpdateToolInput,
} from './schemas'

/** The organization's tools: `/tools` CRUD (DELETE archives), and the lookups agents and the runtime make. */

const DEFAULT_ICON = 'globe'
const DEFAULT_ICON_COLOR = '#3B82F6'
const STATUSES: ToolStatus[] = ['active', 'archived']

const toolNotFound = () => notFound('Tool not found')

export function toolView(row: ToolRow): ToolViewShape {
  return {
    id: row.id,
    tool_uuid: row.toolUuid,
    name: row.name,
    description: row.description,
    category: row.category,
    icon: row.icon,
    icon_color: row.iconColor,
    status: row.status,
    definition: row.definition,
    function_name: toolFunctionName(row.name),
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

/**
 * What a valid definition names that must hold in the organization: its credential and recording exist, its URL is
 * not this server. Checked at every save, and again when a tool is restored as it was (its credential or recording
 * may have been deleted while it was archived, when nothing named them).
 */
function referenceProblems(ctx: AppContext, organizationId: number, checked: ToolDefinition): ValidationItem[] {
  const at = ['body', 'definition', checked.type, 'config']
  const items: ValidationItem[] = []
  if (checked.type === 'http_api' || checked.type === 'mcp') {
    const { credential_uuid: credentialUuid, url } = checked.config
    if (credentialUuid && !readCredential(ctx, organizationId, credentialUuid)) {
      items.push(
        valueError(
          [...at, 'credential_uuid'],
          `credential '${credentialUuid}' is not a credential of this organization`,
          credentialUuid,
        ),
      )
    }
    if (namesThisServer(ctx, url)) items.push(valueError([...at, 'url'], THIS_SERVER_MESSAGE, url))
  }
  const recordingProblem = toolRecordingProblem(ctx, organizationId, checked, at)
  if (recordingProblem) items.push(recordingProblem)
  return items
}

/** A comma-separated filter of allowed values, or the 422 naming the unknown ones. */
function parseFilter<T extends string>(raw: string | undefined, allowed: readonly T[], field: string): T[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined
  const values = raw.split(',').map((value) => value.trim())
  const unknown = values.filter((value) => !allowed.includes(value as T))
  if (unknown.length > 0) {
    throw invalid([
      valueError(
        ['query', field],
        `unknown ${field} ${unknown.map((value) => `'${value}'`).join(', ')}; use ${allowed.join(', ')}`,
        raw,
      ),
    ])
  }
  return values as T[]
}

export function listTools(
  ctx: AppContext,
  organizationId: number,
  filters: { status?: string; category?: string },
): ToolViewShape[] {
  const statuses = parseFilter(filters.status, STATUSES, 'status') ?? ['active']
  const categories = parseFilter(filters.category, TOOL_TYPES, 'category')
  return ctx.db
    .select()
    .from(tools)
    .where(
      and(
        eq(tools.organizationId, organizationId),
        inArray(tools.status, statuses),
        categories ? inArray(tools.category, categories) : undefined,
      ),
    )
    .orderBy(asc(tools.id))
    .all()
    .map(toolView)
}

export function findTool(ctx: AppContext, organizationId: number, toolUuid: string): ToolRow {
  const row = ctx.db
    .select()
    .from(tools)
    .where(and(eq(tools.toolUuid, toolUuid), eq(tools.organizationId, organizationId)))
    .get()
  if (!row) throw toolNotFound()
  return row
}

export const getTool = (ctx: AppContext, organizationId: number, toolUuid: string) =>
  toolView(findTool(ctx, organizationId, toolUuid))

function checkedDefinition(
  ctx: AppContext,
  organizationId: number,
  definition: CreateToolInput['definition'],
  category: ToolCategory | null | undefined,
) {
  const { definition: checked, problems } = checkDefinition(definition, ['body', 'definition'])
  const items: ValidationItem[] = [...problems, ...referenceProblems(ctx, organizationId, checked)]
  if (category && category !== definition.type) {
    items.push(
      valueError(
        ['body', 'category'],
        `category '${category}' must match definition.type '${definition.type}'`,
        category,
      ),
    )
  }
  if (items.length > 0) throw invalid(items)
  return checked
}

export function createTool(ctx: AppContext, organizationId: number, body: CreateToolInput): ToolViewShape {
  const definition = checkedDefinition(ctx, organizationId, body.definition, body.category)
  const now = isoNow(ctx.clock)
  const row = ctx.db
    .insert(tools)
    .values({
      organizationId,
      toolUuid: crypto.randomUUID(),
      name: body.name,
      description: body.description ?? null,
      category: definition.type,
      icon: body.icon ?? DEFAULT_ICON,
      iconColor: body.icon_color ?? DEFAULT_ICON_COLOR,
      definition,
      createdAt: now,
      updatedAt: now,
    })
    .returning()
    .get()
  return toolView(row)
}

/**
 * A tool restored as it was (no new definition) must still be able to run: what its definition names is checked again,
 * and each problem is reported at `status`, which is what the request changes.
 */
function checkStillRunnable(ctx: AppContext, organizationId: number, stored: ToolRow['definition']): void {
  const problems = referenceProblems(ctx, organizationId, stored as ToolDefinition)
  if (problems.length === 0) return
  throw invalid(
    problems.map((problem) =>
      valueError(
        ['body', 'status'],
        `the tool cannot be restored as it is, it names what is gone: ${problem.msg}; send a definition that names another one (or none) with the restore`,
        'active',
      ),
    ),
  )
}

/** Changes what is sent; a new definition may change the tool's type (its category follows). */
export function updateTool(
  ctx: AppContext,
  organizationId: number,
  toolUuid: string,
  body: UpdateToolInput,
): ToolViewShape {
  const current = findTool(ctx, organizationId, toolUuid)
  const definition = body.definition
    ? keepDiscovery(checkedDefinition(ctx, organizationId, body.definition, null), current.definition)
    : current.definition
  if (!body.definition && body.status === 'active' && current.status !== 'active')
    checkStillRunnable(ctx, organizationId, current.definition)
  const row = ctx.db
    .update(tools)
    .set({
      name: body.name ?? current.name,
      description: body.description === undefined ? current.description : body.description,
      icon: body.icon ?? current.icon,
      iconColor: body.icon_color ?? current.iconColor,
      status: body.status ?? current.status,
      definition,
      category: definition.type,
      updatedAt: isoNow(ctx.clock),
    })
    .where(eq(tools.id, current.id))
    .returning()
    .get()
  return toolView(row)
}

/** Archived, not removed: agent versions and runs keep naming it; PUT `status: active` brings it back. */
export function archiveTool(
  ctx: AppContext,
  organizationId: number,
  toolUuid: string,
): { status: 'archived'; tool_uuid: string } {
  const current = findTool(ctx, organizationId, toolUuid)
  ctx.db
    .update(tools)
    .set({ status: 'archived', updatedAt: isoNow(ctx.clock) })
    .where(eq(tools.id, current.id))
    .run()
  return { status: 'archived', tool_uuid: toolUuid }
}

/** The active tools of the organization among `uuids`, by uuid; uuids of archived tools, of other organizations or of nothing are absent. */
export function activeToolsByUuid(
  ctx: AppContext,
  organizationId: number,
  uuids: readonly string[],
): Map<string, AgentTool> {
  if (uuids.length === 0) return new Map()
  const rows = ctx.db
    .select()
    .from(tools)
    .where(
      and(
        eq(tools.organizationId, organizationId),
        eq(tools.status, 'active'),
        inArray(tools.toolUuid, [...new Set(uuids)]),
      ),
    )
    .all()
  return new Map(
    rows.map((row) => [
      row.toolUuid,
      { tool_uuid: row.toolUuid, name: row.name, description: row.description, definition: row.definition },
    ]),
  )
}

/** Each node with the tool uuids it names, and the organization's active tools among them. */
function toolReferences(ctx: AppContext, organizationId: number, definition: AgentDefinition) {
  const named = definition.nodes.map((node) => ({
    node,
    uuids: Array.isArray(node.data.tool_uuids)
      ? node.data.tool_uuids.filter((uuid): uuid is string => typeof uuid === 'string')
      : [],
  }))
  return {
    named,
    known: activeToolsByUuid(
      ctx,
      organizationId,
      named.flatMap(({ uuids }) => uuids),
    ),
  }
}

export const nodeToolError = (nodeId: string, message: string): DefinitionError => ({
  kind: 'node',
  id: nodeId,
  field: 'data.tool_uuids',
  message,
})

type ToolReferences = ReturnType<typeof toolReferences>

/** A node naming an active `transfer_call` tool, with that tool. */
export type NamedTransferTool = { node: AgentDefinition['nodes'][number]; tool: AgentTool }

/** The nodes naming an active `transfer_call` tool, each with that tool (once per node). */
function namedTransferTools({ named, known }: ToolReferences): NamedTransferTool[] {
  return named.flatMap(({ node, uuids }) =>
    [...new Set(uuids)]
      .map((uuid) => known.get(uuid))
      .filter((tool): tool is AgentTool => tool?.definition.type === 'transfer_call')
      .map((tool) => ({ node, tool })),
  )
}

/** Whether a definition's nodes name an active `transfer_call` tool of the organization. */
export function offersCallTransfer(ctx: AppContext, organizationId: number, definition: AgentDefinition): boolean {
  return namedTransferTools(toolReferences(ctx, organizationId, definition)).length > 0
}

/**
 * A definition's `tool_uuids` checked from one look-up of the tools: `unknown`, one error per node and uuid naming no
 * active tool of the organization; `transfers`, the nodes naming an active `transfer_call` tool (the agent service
 * checks those against the default telephony configuration when publishing).
 */
export function toolReferenceCheck(
  ctx: AppContext,
  organizationId: number,
  definition: AgentDefinition,
): { unknown: DefinitionError[]; transfers: NamedTransferTool[] } {
  const references = toolReferences(ctx, organizationId, definition)
  const unknown = references.named.flatMap(({ node, uuids }) =>
    uuids
      .filter((uuid) => !references.known.has(uuid))
      .map((uuid) => nodeToolError(node.id, `Tool '${uuid}' is not an active tool of this organization`)),
  )
  return { unknown, transfers: namedTransferTools(references) }
}
