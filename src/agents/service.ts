import { and, count, desc, eq, inArray } from 'drizzle-orm'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import {
  findTriggerNodes,
  validateDefinition,
  type DefinitionError,
  type AgentDefinition,
} from '../definition/definition'
import { maskDefinitionSecrets, restoreMaskedSecrets } from './secrets'
import { templateContextVariables } from '../definition/template-variables'
import {
  workflowDefinitions,
  workflows,
  workflowTriggers,
  type WorkflowDefinitionRow,
  type WorkflowRow,
  type WorkflowStatus,
} from '../db/schema'
import { DomainError, invalid, notFound, refused } from '../lib/errors'
import { isoNow } from '../lib/clock'
import { withDefaultConfigurations, type AgentConfigurations } from '../definition/configurations'
import type { Agent, AgentCount, AgentVersion, CreateWorkflowBody, UpdateWorkflowBody } from './schemas'
import { transaction } from '../db/transaction'
import { batchedTransaction } from '../db/batched-transaction'
import { nodeToolError, toolReferenceCheck, type NamedTransferTool } from '../tools/service'
import { defaultOutboundProvider } from '../telephony/config/configurations'
import { PROVIDERS, supportsCallTransfer } from '../telephony/config/providers'
import { recordingReferenceErrors } from '../recordings/service'
import { documentReferenceErrors } from '../knowledge/documents'
import { hostNotWrittenOut } from '../egress/network-policy'
import { namesThisServer, THIS_SERVER_MESSAGE } from '../egress/policy'
import { modelConfigurationPinProblems } from '../models/configurations'
import {
  agentListJson,
  currentAndDraftVersions,
  insertAgent,
  insertAgentVersion,
  renameAgent,
  type NewAgentVersion,
} from './queries'

type AgentView = Static<typeof Agent>

/** The pinned model configuration must be one of the organization's (422 otherwise). */
function checkModelPin(
  ctx: AppContext,
  organizationId: number,
  configurations: Record<string, unknown>,
  loc: (string | number)[],
): void {
  const problems = modelConfigurationPinProblems(ctx, organizationId, configurations, loc)
  if (problems.length > 0) throw invalid(problems)
}

const AGENT_STATUSES: WorkflowStatus[] = ['active', 'archived']

const agentNotFound = (id: number) => notFound(`Workflow with id ${id} not found`)

const definitionErrors = (kind: 'conflict' | 'invalid', errors: DefinitionError[]) =>
  new DomainError(kind, { is_valid: false, errors })

/** The definition with minted trigger paths, or the 422 listing every problem. */
function checkedDefinition(input: unknown): { definition: AgentDefinition; triggerPaths: string[] } {
  const { definition, errors, triggerPaths } = validateDefinition(input)
  if (errors.length > 0) throw definitionErrors('invalid', errors)
  return { definition, triggerPaths }
}

/**
 * Every node's `tool_uuids` must name active tools of the organization, its `document_uuids` the organization's
 * knowledge-base documents, and every recording the definition plays (audio greeting, audio transition speech,
 * `RECORDING_ID:` in a prompt) one of its recordings: checked on save and again at publish. Publishing (creating an
 * agent publishes its first version) also refuses transfer_call tools when the organization's default telephony
 * configuration cannot transfer calls; a draft may wait for the configuration to change.
 */
function checkReferences(
  ctx: AppContext,
  organizationId: number,
  definition: AgentDefinition,
  publishing: boolean,
): void {
  const { unknown, transfers } = toolReferenceCheck(ctx, organizationId, definition)
  const errors = [
    ...unknown,
    ...(publishing ? untransferableTools(ctx, organizationId, transfers) : []),
    ...documentReferenceErrors(ctx, organizationId, definition),
    ...recordingReferenceErrors(ctx, organizationId, definition),
  ]
  if (errors.length > 0) throw definitionErrors('invalid', errors)
}

function untransferableTools(
  ctx: AppContext,
  organizationId: number,
  transfers: NamedTransferTool[],
): DefinitionError[] {
  // Most agents name no transfer tool: then the default configuration is not even looked up.
  if (transfers.length === 0) return []
  const provider = defaultOutboundProvider(ctx, organizationId)
  if (provider === null || supportsCallTransfer(provider)) return []
  const { displayName } = PROVIDERS[provider]
  return transfers.map(({ node, tool }) =>
    nodeToolError(
      node.id,
      `Tool '${tool.name}' (${tool.tool_uuid}) transfers calls, which ${displayName}, the provider of the default telephony configuration, cannot do`,
    ),
  )
}

/**
 * The node fields holding a URL that Ringbase sends requests to: webhook nodes', the Start node's pre-call fetch and
 * a QA node's own model server.
 */
const OUTBOUND_URL_FIELDS = ['endpoint_url', 'pre_call_fetch_url', 'qa_endpoint']

/**
 * A webhook, pre-call fetch or QA model URL must name its host as written (http(s), a host right after `//`, no
 * placeholder in it), and one written to reach this server itself is refused, on save and at publish (422); a webhook
 * or pre-call fetch name that resolves to it is refused when the request is sent.
 */
function checkOutboundUrls(ctx: AppContext, definition: AgentDefinition): void {
  const problem = (url: unknown): string | null => {
    if (typeof url !== 'string' || url === '') return null
    return hostNotWrittenOut(url) ?? (namesThisServer(ctx, url) ? THIS_SERVER_MESSAGE : null)
  }
  const errors = definition.nodes.flatMap((node) =>
    OUTBOUND_URL_FIELDS.flatMap((field): DefinitionError[] => {
      const message = problem(node.data[field])
      return message ? [{ kind: 'node', id: node.id, field: `data.${field}`, message }] : []
    }),
  )
  if (errors.length > 0) throw definitionErrors('invalid', errors)
}

/** Reserves the definition's trigger paths for the workflow; 409 when another workflow (of any organization) has one. */
function claimTriggerPaths(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  definition: AgentDefinition,
  paths: string[],
): void {
  if (paths.length === 0) return
  const owners = ctx.db.select().from(workflowTriggers).where(inArray(workflowTriggers.triggerPath, paths)).all()
  const taken = owners.filter((owner) => owner.workflowId !== agentId).map((owner) => owner.triggerPath)
  if (taken.length > 0) {
    throw definitionErrors(
      'conflict',
      findTriggerNodes(definition)
        .filter((node) => taken.includes(node.data.trigger_path as string))
        .map((node) => ({
          kind: 'node',
          id: node.id,
          field: 'data.trigger_path',
          message: `Trigger path '${node.data.trigger_path}' is already used by another agent: choose another, or leave it empty to get a generated one`,
        })),
    )
  }
  const owned = new Set(owners.map((owner) => owner.triggerPath))
  const createdAt = isoNow(ctx.clock)
  const fresh = paths
    .filter((path) => !owned.has(path))
    .map((triggerPath) => ({ triggerPath, workflowId: agentId, organizationId, createdAt }))
  if (fresh.length > 0) ctx.db.insert(workflowTriggers).values(fresh).run()
}

function agentView(agent: WorkflowRow, version: WorkflowDefinitionRow): AgentView {
  return {
    id: agent.id,
    name: agent.name,
    status: agent.status,
    created_at: agent.createdAt,
    workflow_definition: maskDefinitionSecrets(version.workflowJson as AgentDefinition),
    current_definition_id: version.id,
    template_context_variables: version.templateContextVariables,
    call_disposition_codes: { disposition_codes: agent.callDispositionCodes },
    total_runs: agent.totalRuns,
    workflow_configurations: version.workflowConfigurations,
    version_number: version.versionNumber,
    version_status: version.status,
    workflow_uuid: agent.workflowUuid,
  }
}

/**
 * The workflow with the version clients edit: its draft when there is one, else its published version. The query
 * finds at most those two (one of each at most) and takes the first: a bound `LIMIT 1` would make SQLite compile the
 * prepared statement again on every run (~25 µs).
 */
function findCurrent(ctx: AppContext, organizationId: number, agentId: number) {
  return currentAndDraftVersions(ctx, organizationId, agentId)[0]
}

export function getAgent(ctx: AppContext, organizationId: number, agentId: number): AgentView {
  const current = findCurrent(ctx, organizationId, agentId)
  if (!current) throw agentNotFound(agentId)
  return agentView(current.workflow, current.version)
}

function versionValues(definition: AgentDefinition, configurations: AgentConfigurations) {
  return {
    workflowJson: definition,
    workflowConfigurations: configurations,
    templateContextVariables: templateContextVariables(definition),
  }
}

/** The new version's row is what was written, with its id: not read back, so its JSON columns are not parsed again. */
const insertVersion = (ctx: AppContext, version: NewAgentVersion): WorkflowDefinitionRow => ({
  ...version,
  id: insertAgentVersion(ctx, version),
})

/**
 * A new agent whose first version is published at once. Creates arriving together share one commit (most of a
 * create's cost was its own BEGIN and COMMIT); a definition's 422 is found before it joins the batch.
 */
export function createAgent(
  ctx: AppContext,
  organizationId: number,
  body: Static<typeof CreateWorkflowBody>,
): Promise<AgentView> {
  const { definition, triggerPaths } = checkedDefinition(body.workflow_definition)
  checkReferences(ctx, organizationId, definition, true)
  checkOutboundUrls(ctx, definition)
  checkModelPin(ctx, organizationId, body.workflow_configurations ?? {}, ['body', 'workflow_configurations'])
  const now = isoNow(ctx.clock)
  return batchedTransaction(ctx, () => {
    const agent = insertAgent(ctx, { organizationId, agentUuid: crypto.randomUUID(), name: body.name, now })
    claimTriggerPaths(ctx, organizationId, agent.id, definition, triggerPaths)
    const version = insertVersion(ctx, {
      workflowId: agent.id,
      organizationId,
      versionNumber: 1,
      status: 'published',
      ...versionValues(definition, withDefaultConfigurations(body.workflow_configurations)),
      createdAt: now,
      publishedAt: now,
    })
    return agentView(agent, version)
  })
}

/** Renames, and saves a sent definition or configuration as the draft (created from the published version if none). */
export function updateAgent(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  body: Static<typeof UpdateWorkflowBody>,
): AgentView {
  const current = findCurrent(ctx, organizationId, agentId)
  if (!current) throw agentNotFound(agentId)
  const sent = body.workflow_definition != null ? checkedDefinition(body.workflow_definition) : null
  if (sent) {
    checkReferences(ctx, organizationId, sent.definition, false)
    checkOutboundUrls(ctx, sent.definition)
  }
  if (body.workflow_configurations)
    checkModelPin(ctx, organizationId, body.workflow_configurations, ['body', 'workflow_configurations'])
  const savesVersion = sent !== null || body.workflow_configurations != null
  const name = body.name ?? current.workflow.name
  const now = isoNow(ctx.clock)
  transaction(ctx, () => {
    renameAgent(ctx, agentId, name, now)
    if (!savesVersion) return
    const stored = current.version.workflowJson as AgentDefinition
    const definition = sent ? restoreMaskedSecrets(sent.definition, stored) : stored
    if (sent) claimTriggerPaths(ctx, organizationId, agentId, definition, sent.triggerPaths)
    const configurations = withDefaultConfigurations(
      body.workflow_configurations ?? current.version.workflowConfigurations,
    )
    const values = versionValues(definition, configurations)
    if (current.version.status === 'draft') {
      ctx.db.update(workflowDefinitions).set(values).where(eq(workflowDefinitions.id, current.version.id)).run()
    } else {
      insertVersion(ctx, {
        workflowId: agentId,
        organizationId,
        versionNumber: current.version.versionNumber + 1,
        status: 'draft',
        ...values,
        createdAt: now,
        publishedAt: null,
      })
    }
  })
  // A rename changes nothing else: the rows read above, renamed, are what reading them again would give.
  return savesVersion
    ? getAgent(ctx, organizationId, agentId)
    : agentView({ ...current.workflow, name, updatedAt: now }, current.version)
}

/** The draft becomes the published version; the version published before is archived. */
export function publishAgent(ctx: AppContext, organizationId: number, agentId: number): AgentView {
  const current = findCurrent(ctx, organizationId, agentId)
  if (!current) throw agentNotFound(agentId)
  if (current.version.status !== 'draft') throw refused('Workflow has no draft to publish')
  checkReferences(ctx, organizationId, current.version.workflowJson as AgentDefinition, true)
  checkOutboundUrls(ctx, current.version.workflowJson as AgentDefinition)
  checkModelPin(ctx, organizationId, current.version.workflowConfigurations, ['workflow_configurations'])
  transaction(ctx, () => {
    // Archive first: at most one version may be published at any moment.
    ctx.db
      .update(workflowDefinitions)
      .set({ status: 'archived' })
      .where(and(eq(workflowDefinitions.workflowId, agentId), eq(workflowDefinitions.status, 'published')))
      .run()
    ctx.db
      .update(workflowDefinitions)
      .set({ status: 'published', publishedAt: isoNow(ctx.clock) })
      .where(eq(workflowDefinitions.id, current.version.id))
      .run()
  })
  return getAgent(ctx, organizationId, agentId)
}

export function setAgentStatus(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  status: WorkflowStatus,
): AgentView {
  const updated = ctx.db
    .update(workflows)
    .set({ status, updatedAt: isoNow(ctx.clock) })
    .where(and(eq(workflows.id, agentId), eq(workflows.organizationId, organizationId)))
    .returning({ id: workflows.id })
    .get()
  if (!updated) throw notFound(`Workflow with ID ${agentId} not found`)
  return getAgent(ctx, organizationId, agentId)
}

/** `active`, `archived` or both comma-separated; anything else is a 422 with a string detail. */
function parseStatusFilter(raw: string | undefined): WorkflowStatus[] {
  if (raw === undefined) return AGENT_STATUSES
  const requested = raw.split(',').map((token) => token.trim())
  const unknown = requested.filter((token) => !AGENT_STATUSES.includes(token as WorkflowStatus))
  if (unknown.length > 0) {
    const pythonList = (values: string[]) => `[${values.map((value) => `'${value}'`).join(', ')}]`
    throw invalid(
      `Invalid workflow status filter: ${pythonList(unknown)}. Allowed values: ${pythonList(AGENT_STATUSES)}.`,
    )
  }
  return requested as WorkflowStatus[]
}

/**
 * The agents of the organization as the JSON text of the list response (`AgentListItem`s, newest first): the rows come
 * out in the response's shape, so the database writes the JSON (see `jsonRows`).
 */
export function listAgentsJson(ctx: AppContext, organizationId: number, status: string | undefined): string {
  const [first, ...others] = new Set(parseStatusFilter(status))
  return agentListJson(ctx, organizationId, others.length > 0 ? null : first)
}

export function countAgents(ctx: AppContext, organizationId: number): Static<typeof AgentCount> {
  const counts = { total: 0, active: 0, archived: 0 }
  const rows = ctx.db
    .select({ status: workflows.status, workflows: count() })
    .from(workflows)
    .where(eq(workflows.organizationId, organizationId))
    .groupBy(workflows.status)
    .all()
  for (const row of rows) {
    counts[row.status] = row.workflows
    counts.total += row.workflows
  }
  return counts
}

/** Newest first. */
export function listAgentVersions(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  page: { limit?: number; offset?: number },
): Static<typeof AgentVersion>[] {
  const owner = ctx.db
    .select({ id: workflows.id })
    .from(workflows)
    .where(and(eq(workflows.id, agentId), eq(workflows.organizationId, organizationId)))
    .get()
  if (!owner) throw agentNotFound(agentId)
  return ctx.db
    .select({
      id: workflowDefinitions.id,
      version_number: workflowDefinitions.versionNumber,
      status: workflowDefinitions.status,
      created_at: workflowDefinitions.createdAt,
      published_at: workflowDefinitions.publishedAt,
      workflow_json: workflowDefinitions.workflowJson,
      workflow_configurations: workflowDefinitions.workflowConfigurations,
      template_context_variables: workflowDefinitions.templateContextVariables,
    })
    .from(workflowDefinitions)
    .where(eq(workflowDefinitions.workflowId, agentId))
    .orderBy(desc(workflowDefinitions.versionNumber))
    .limit(page.limit ?? Number.MAX_SAFE_INTEGER)
    .offset(page.offset ?? 0)
    .all()
    .map((version) => ({ ...version, workflow_json: maskDefinitionSecrets(version.workflow_json as AgentDefinition) }))
}
