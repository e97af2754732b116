import type { AgentNode } from '../definition/definition'
import type { AgentTool } from './schemas'

/**
 * The built-in tool a node's `document_uuids` give it (reference §2.6): `retrieve_from_knowledge_base(query)` over
 * that node's documents only. Not a stored tool: the runtime makes it for each node that names documents; what it
 * does is src/knowledge/retrieval.ts, reached through the run's ConversationTools.
 */

export const KNOWLEDGE_FUNCTION_NAME = 'retrieve_from_knowledge_base'

/** The node's `document_uuids`, without repeats. */
export function nodeDocumentUuids(node: AgentNode): string[] {
  const value = node.data.document_uuids
  return Array.isArray(value)
    ? [...new Set(value.filter((uuid): uuid is string => typeof uuid === 'string' && uuid !== ''))]
    : []
}

export function knowledgeBaseTool(node: AgentNode): AgentTool | null {
  const documentUuids = nodeDocumentUuids(node)
  if (documentUuids.length === 0) return null
  const documents = documentUuids.length === 1 ? 'one document' : `${documentUuids.length} documents`
  return {
    tool_uuid: 'knowledge_base',
    name: KNOWLEDGE_FUNCTION_NAME,
    description:
      `Look up facts in the knowledge base (${documents}). Call it before answering a question the documents may cover, ` +
      'and answer from what it returns; say so when it returns nothing relevant.',
    definition: { schema_version: 1, type: 'knowledge_base', config: { document_uuids: documentUuids } },
  }
}
