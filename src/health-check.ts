/** What `ringbase health` found: `ok` when the server answered its health route with 200. */
export type HealthCheckResult = { ok: boolean; message: string }

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
    await response.body?.cancel()
    return response.status === 200
      ? { ok: true, message: `${url}: ok` }
      : { ok: false, message: `${url}: HTTP ${response.status}` }
  } catch (error) {
    const reason =
      error instanceof Error && error.name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : String((error as Error)?.message ?? error)
    return { ok: false, message: `${url}: ${reason}` }
  }
}
