import { parseJsonAnswer, readAnswer, requestModel, type ModelConnection, type ModelTimeouts } from './http'
import { ModelServerError, type ModelRef } from './types'

/**
 * Embeddings behind any OpenAI-compatible `POST {base_url}/embeddings` (OpenAI, Ollama, vLLM, llama.cpp, LocalAI,
 * text-embeddings-inference…): texts in batches, each batch retried on a transient failure, vectors returned in input
 * order, normalised to length 1 so a dot product is their cosine similarity.
 */

export type EmbeddingsSettings = { model: string; dimensions?: number }

export type Embedded = { vectors: Float32Array[]; tokens: number }

export interface EmbeddingsClient {
  readonly ref: ModelRef
  embed(texts: string[], options?: { signal?: AbortSignal }): Promise<Embedded>
}

export type EmbeddingsClientOptions = {
  /** Texts per request (the reference sends 64). */
  batchSize?: number
  /** Tries per batch for a transient failure (no answer, 408, 429, 5xx). */
  attempts?: number
  retryDelayMs?: number
  timeouts?: Partial<ModelTimeouts>
}

const DEFAULT_TIMEOUTS: ModelTimeouts = { firstByteMs: 30_000, idleMs: 30_000, totalMs: 120_000 }

const isTransient = (error: unknown) =>
  error instanceof ModelServerError &&
  (error.status === null || error.status === 408 || error.status === 429 || error.status >= 500)

/** Scales `vector` to length 1 in place; a zero vector stays zero (it then matches nothing). */
export function normalize(vector: Float32Array): Float32Array {
  let sum = 0
  for (let index = 0; index < vector.length; index++) sum += vector[index] * vector[index]
  const norm = Math.sqrt(sum)
  if (norm > 0) for (let index = 0; index < vector.length; index++) vector[index] /= norm
  return vector
}

function parseVectors(answer: any, count: number, what: string): Embedded {
  const data = answer?.data
  if (!Array.isArray(data) || data.length !== count) {
    throw new ModelServerError(
      `${what} failed: asked for ${count} vectors, the server sent ${Array.isArray(data) ? data.length : 'none'}`,
    )
  }
  const vectors: Float32Array[] = new Array(count)
  for (const [position, item] of data.entries()) {
    const index = Number.isInteger(item?.index) ? item.index : position
    const values = item?.embedding
    if (
      !Array.isArray(values) ||
      values.length === 0 ||
      index < 0 ||
      index >= count ||
      !values.every((value) => typeof value === 'number' && Number.isFinite(value))
    ) {
      throw new ModelServerError(`${what} failed: vector ${position} is not a list of numbers`)
    }
    vectors[index] = normalize(Float32Array.from(values))
  }
  const dimension = vectors[0]?.length
  if (vectors.some((vector) => !vector || vector.length !== dimension))
    throw new ModelServerError(`${what} failed: the vectors differ in length`)
  const tokens = Number(answer?.usage?.prompt_tokens ?? answer?.usage?.total_tokens)
  return { vectors, tokens: Number.isFinite(tokens) ? tokens : 0 }
}

export function createEmbeddingsClient(
  connection: ModelConnection,
  settings: EmbeddingsSettings,
  options: EmbeddingsClientOptions = {},
): EmbeddingsClient {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts }
  const batchSize = options.batchSize ?? 64
  const attempts = options.attempts ?? 3
  const retryDelayMs = options.retryDelayMs ?? 1000
  const what = 'embeddings'

  async function embedBatch(input: string[], signal?: AbortSignal): Promise<Embedded> {
    for (let attempt = 1; ; attempt++) {
      try {
        const body = {
          model: settings.model,
          input,
          encoding_format: 'float',
          ...(settings.dimensions ? { dimensions: settings.dimensions } : {}),
        }
        const exchange = await requestModel(connection, { what, path: '/embeddings', body, timeouts, signal })
        return await readAnswer(exchange, (text) => parseVectors(parseJsonAnswer(text, what), input.length, what))
      } catch (error) {
        if (attempt >= attempts || !isTransient(error) || signal?.aborted) throw error
        await Bun.sleep(retryDelayMs * 2 ** (attempt - 1))
      }
    }
  }

  return {
    ref: { service: connection.provider, model: settings.model },
    async embed(texts, { signal } = {}) {
      const vectors: Float32Array[] = []
      let tokens = 0
      for (let start = 0; start < texts.length; start += batchSize) {
        const batch = await embedBatch(texts.slice(start, start + batchSize), signal)
        if (vectors.length > 0 && batch.vectors[0].length !== vectors[0].length)
          throw new ModelServerError(`${what} failed: the vectors differ in length`)
        vectors.push(...batch.vectors)
        tokens += batch.tokens
      }
      return { vectors, tokens }
    },
  }
}
