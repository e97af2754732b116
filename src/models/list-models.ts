import { parseJsonAnswer, readAnswer, requestModel, type ModelConnection, type ModelTimeouts } from './http'
import { ModelServerError } from './types'

const DEFAULT_TIMEOUTS: ModelTimeouts = { firstByteMs: 10_000, idleMs: 10_000, totalMs: 10_000 }

/** The ids a server lists at `GET {base_url}/models`: the connection check. */
export async function listModels(
  connection: ModelConnection,
  options: { signal?: AbortSignal; timeouts?: Partial<ModelTimeouts> } = {},
): Promise<string[]> {
  const what = 'model list'
  const exchange = await requestModel(connection, {
    what,
    path: '/models',
    method: 'GET',
    timeouts: { ...DEFAULT_TIMEOUTS, ...options.timeouts },
    signal: options.signal,
  })
  return readAnswer(exchange, (text) => {
    const data = parseJsonAnswer(text, what)?.data
    if (!Array.isArray(data)) throw new ModelServerError(`${what} failed: the answer has no "data" list`)
    return data.map((model) => model?.id).filter((id): id is string => typeof id === 'string')
  })
}
