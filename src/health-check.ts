/**
 * What `ringbase health` found: `ok` when the server answered its health route with 200 and its database and object
 * store are reachable (a server that cannot keep its data, recordings and uploads is not healthy). The message names the database and the
 * live instances too.
 */
export type HealthCheckResult = { ok: boolean; message: string }

/** The parts of the health answer the command reports (an older server may lack some). */
type HealthAnswer = {
  object_store?: { kind: string; reachable: boolean }
  database?: { backend: string; reachable?: boolean }
  instances?: { live: number }
}

/** `database (sqlite, 2 live instances)`, or '' when the server did not say. */
function databaseLine({ database, instances }: HealthAnswer): string {
  if (!database) return ''
  const live = instances ? `, ${instances.live} live instance${instances.live === 1 ? '' : 's'}` : ''
  return `, database (${database.backend}${live})`
}

/** A server listening on every interface is reached over loopback. */
function reachableHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1'
  if (host === '::') return '[::1]'
  return host.includes(':') ? `[${host}]` : host
}

/**
 * Asks a running server for `GET /api/v1/health`, the way a container health check does: no curl in the image, a
 * short timeout so a hung server counts as unhealthy.
 */
export async function checkHealth(host: string, port: number, timeoutMs = 3000): Promise<HealthCheckResult> {
  const url = `http://${reachableHost(host)}:${port}/api/v1/health`
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
    if (response.status !== 200) {
      await response.body?.cancel()
      return { ok: false, message: `${url}: HTTP ${response.status}` }
    }
    const answer = (await response.json()) as HealthAnswer
    const store = answer.object_store
    if (answer.database?.reachable === false)
      return { ok: false, message: `${url}: database (${answer.database.backend}) unreachable` }
    if (store && !store.reachable) return { ok: false, message: `${url}: object store (${store.kind}) unreachable` }
    return {
      ok: true,
      message: `${url}: ok${databaseLine(answer)}${store ? `, object store (${store.kind}) reachable` : ''}`,
    }
  } catch (error) {
    const reason =
      error instanceof Error && error.name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : String((error as Error)?.message ?? error)
    return { ok: false, message: `${url}: ${reason}` }
  }
}
