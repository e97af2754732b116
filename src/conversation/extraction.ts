import type { AgentNode } from '../definition/definition'
import { isPlainObject } from '../lib/values'
import type { ChatMessage, LlmClient, ModelRef, TokenUsage } from '../models/types'

/** Variable extraction: one JSON-schema-constrained completion reads declared values out of the conversation. */

export type ExtractionVariable = { name: string; type: string; prompt: string }

export type ExtractionResult = { ok: true; values: Record<string, unknown> } | { ok: false; error: string }

const JSON_TYPES: Record<string, string> = {
  string: 'string',
  number: 'number',
  integer: 'integer',
  boolean: 'boolean',
}

export function extractionVariables(node: AgentNode): ExtractionVariable[] {
  const rows = node.data.extraction_variables
  if (node.data.extraction_enabled !== true || !Array.isArray(rows)) return []
  return rows.filter(isPlainObject).flatMap((row) =>
    typeof row.name === 'string' && row.name !== ''
      ? [
          {
            name: row.name,
            type: typeof row.type === 'string' ? row.type : 'string',
            prompt: typeof row.prompt === 'string' ? row.prompt : '',
          },
        ]
      : [],
  )
}

/** Every variable is required but may be null, the model's way to say "not mentioned" under a strict schema. */
export function extractionSchema(variables: ExtractionVariable[]): Record<string, unknown> {
  return {
    type: 'object',
    properties: Object.fromEntries(
      variables.map(({ name, type, prompt }) => [
        name,
        { type: [JSON_TYPES[type] ?? 'string', 'null'], ...(prompt ? { description: prompt } : {}) },
      ]),
    ),
    required: variables.map(({ name }) => name),
    additionalProperties: false,
  }
}

const TRUE_WORDS = new Set(['true', 'yes', 'y', '1'])
const FALSE_WORDS = new Set(['false', 'no', 'n', '0'])

/** The value as the declared type, or undefined when it cannot be read as one (then it is not stored). */
export function coerceExtracted(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return undefined
  switch (type) {
    case 'number':
    case 'integer': {
      const number =
        typeof value === 'number'
          ? value
          : typeof value === 'string' && value.trim() !== ''
            ? Number(value.trim())
            : NaN
      if (!Number.isFinite(number)) return undefined
      return type === 'integer' ? Math.round(number) : number
    }
    case 'boolean': {
      if (typeof value === 'boolean') return value
      const word = String(value).trim().toLowerCase()
      return TRUE_WORDS.has(word) ? true : FALSE_WORDS.has(word) ? false : undefined
    }
    default:
      return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value)
  }
}

const TOOL_RESULT_LIMIT = 2000

/** The conversation as text for the extractor: user and agent turns, tool results (not transitions), cut to size. */
export function historyForExtraction(history: ChatMessage[], transitionCallIds: Set<string>): string {
  const names = new Map<string, string>()
  const lines: string[] = []
  for (const message of history) {
    if (message.role === 'user') lines.push(`user: ${message.content}`)
    else if (message.role === 'assistant') {
      for (const call of message.toolCalls ?? []) names.set(call.id, call.name)
      if (message.content) lines.push(`assistant: ${message.content}`)
    } else if (message.role === 'tool' && !transitionCallIds.has(message.toolCallId)) {
      lines.push(
        `[Tool Response: ${names.get(message.toolCallId) ?? 'tool'}] ${message.content.slice(0, TOOL_RESULT_LIMIT)}`,
      )
    }
  }
  return lines.join('\n')
}

const EXTRACTION_INSTRUCTION =
  'You read a phone conversation between an agent and a caller and report values it contains. ' +
  'Answer with one JSON object and nothing else. Use null for a value the conversation does not give.'

export function extractionMessages(
  variables: ExtractionVariable[],
  instructions: string,
  conversation: string,
): ChatMessage[] {
  const list = variables.map(({ name, type, prompt }) => `- ${name} (${type})${prompt ? `: ${prompt}` : ''}`).join('\n')
  return [
    {
      role: 'system',
      content: instructions.trim() ? `${EXTRACTION_INSTRUCTION}\n\n${instructions.trim()}` : EXTRACTION_INSTRUCTION,
    },
    { role: 'user', content: `Values to report:\n${list}\n\nConversation:\n${conversation}` },
  ]
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(text)
    return isPlainObject(parsed) ? parsed : null
  } catch {
    return null
  }
}

/**
 * Asks once, and once more when the answer is not a JSON object. Values are coerced to their declared type; values
 * that are null, undeclared or not readable as their type are left out. Model server errors are reported, not thrown.
 */
export async function extractVariables(
  llm: LlmClient,
  variables: ExtractionVariable[],
  messages: ChatMessage[],
  onUsage: (ref: ModelRef, usage: TokenUsage) => void,
): Promise<ExtractionResult> {
  let lastText = ''
  for (let attempt = 1; attempt <= 2; attempt++) {
    try {
      const answer = await llm.completeJson({
        messages,
        schema: extractionSchema(variables),
        schemaName: 'extracted_variables',
      })
      onUsage(llm.ref, answer.usage)
      lastText = answer.text
    } catch (error) {
      return { ok: false, error: `Extraction request failed: ${(error as Error).message}` }
    }
    const parsed = parseObject(lastText)
    if (!parsed) continue
    const values: Record<string, unknown> = {}
    for (const { name, type } of variables) {
      const value = coerceExtracted(parsed[name], type)
      if (value !== undefined) values[name] = value
    }
    return { ok: true, values }
  }
  return { ok: false, error: `Extraction answer was not a JSON object twice; last answer: ${lastText.slice(0, 200)}` }
}
