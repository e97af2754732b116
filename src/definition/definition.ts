import { listNodeTypes } from './node-catalog'
import { checkDefinition, type DefinitionValidation } from './rules'

export {
  findTriggerNodes,
  type AgentDefinition,
  type AgentEdge,
  type AgentNode,
  type DefinitionError,
  type DefinitionValidation,
  type EdgeData,
} from './rules'

/** A trigger node saved without a path gets a UUID one, unique across the installation. */
function mintTriggerPath(data: Record<string, unknown>, type: string): void {
  if (type === 'trigger' && (data.trigger_path == null || data.trigger_path === ''))
    data.trigger_path = crypto.randomUUID()
}

/**
 * Checks a definition sent by a client against the node catalog (rules.ts) and mints a UUID `trigger_path` for every
 * trigger node without one. Never throws and never changes `input`.
 */
export function validateDefinition(input: unknown): DefinitionValidation {
  return checkDefinition(input, listNodeTypes(), mintTriggerPath)
}
