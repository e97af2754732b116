import { maskSecret } from '../lib/mask'
import type { AgentDefinition, AgentNode } from '../definition/definition'

/** Node data fields that hold credentials, by node type. Stored as sent, masked in every response. */
const SECRET_FIELDS: Record<string, readonly string[]> = {
  qa: ['qa_api_key'],
  tuner: ['tuner_api_key'],
}

/** The node with each non-empty credential in its data replaced by `transform(field, value)`; the node itself when it has none. */
function mapNodeSecrets(node: AgentNode, transform: (field: string, value: string) => string): AgentNode {
  const fields = (SECRET_FIELDS[node.type] ?? []).filter(
    (field) => typeof node.data[field] === 'string' && node.data[field] !== '',
  )
  if (fields.length === 0) return node
  const data = { ...node.data }
  for (const field of fields) data[field] = transform(field, data[field] as string)
  return { ...node, data }
}

/** A copy of the definition as responses show it: every credential masked like a telephony secret. */
export function maskDefinitionSecrets(definition: AgentDefinition): AgentDefinition {
  return {
    ...definition,
    nodes: definition.nodes.map((node) => mapNodeSecrets(node, (_field, value) => maskSecret(value))),
  }
}

/**
 * Lets a client send back the definition it was shown: a credential that exactly equals the mask of the one
 * stored in the node with the same id keeps the stored one. Any other value is a new credential.
 */
export function restoreMaskedSecrets(incoming: AgentDefinition, stored: AgentDefinition): AgentDefinition {
  const storedNodes = new Map(stored.nodes.map((node) => [node.id, node]))
  return {
    ...incoming,
    nodes: incoming.nodes.map((node) =>
      mapNodeSecrets(node, (field, value) => {
        const storedValue = storedNodes.get(node.id)?.data[field]
        return typeof storedValue === 'string' && value === maskSecret(storedValue) ? storedValue : value
      }),
    ),
  }
}
