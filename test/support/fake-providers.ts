import type { ProviderApiBaseUrls } from '../../src/context'
import type { ProvisionedProvider } from '../../src/telephony/config/provisioning'

/**
 * The provider REST endpoints a configuration save calls, served on 127.0.0.1 so tests never reach a real provider.
 * Each provider lives under its own path prefix; every request is recorded.
 */

export type RecordedRequest = {
  provider: ProvisionedProvider
  method: string
  path: string
  headers: Headers
  body: unknown
}

export type FakeProviders = {
  urls: ProviderApiBaseUrls
  requests: RecordedRequest[]
  /** The next request to `provider` gets this answer instead of the normal one. */
  failNext(provider: ProvisionedProvider, status: number, body: unknown): void
  stop(): void
}

export const FAKE_IDS = {
  plivoApplication: 'plivo-app-1001',
  vobizApplication: 'vobiz-app-2002',
  telnyxConnection: 'telnyx-conn-3003',
  cloudonixDomainUuid: 'cx-domain-uuid',
  cloudonixApplication: 4004,
  cloudonixApplicationUuid: 'cx-app-uuid',
}

const PROVIDERS: ProvisionedProvider[] = ['cloudonix', 'plivo', 'telnyx', 'vobiz']

function normalAnswer(
  provider: ProvisionedProvider,
  method: string,
  path: string,
  body: Record<string, unknown>,
): Response {
  if (
    (provider === 'plivo' || provider === 'vobiz') &&
    method === 'POST' &&
    /^\/v1\/Account\/[^/]+\/Application\/$/.test(path)
  ) {
    const appId = provider === 'plivo' ? FAKE_IDS.plivoApplication : FAKE_IDS.vobizApplication
    return Response.json({ api_id: 'api-1', app_id: appId, message: 'created' }, { status: 201 })
  }
  if (provider === 'telnyx' && method === 'POST' && path === '/v2/call_control_applications') {
    return Response.json(
      { data: { id: FAKE_IDS.telnyxConnection, application_name: body.application_name } },
      { status: 201 },
    )
  }
  if (provider === 'cloudonix') {
    const domain = /^\/customers\/self\/domains\/([^/]+)(\/applications)?$/.exec(path)
    if (domain && method === 'GET' && !domain[2])
      return Response.json({ id: 7, uuid: FAKE_IDS.cloudonixDomainUuid, domain: domain[1] })
    if (domain && method === 'POST' && domain[2]) {
      return Response.json({
        id: FAKE_IDS.cloudonixApplication,
        uuid: FAKE_IDS.cloudonixApplicationUuid,
        name: body.name,
      })
    }
    if (domain && method === 'PATCH' && !domain[2])
      return Response.json({ id: 7, defaultApplication: body.defaultApplication })
  }
  return Response.json({ error: 'not found' }, { status: 404 })
}

export function startFakeProviders(): FakeProviders {
  const requests: RecordedRequest[] = []
  const failures = new Map<ProvisionedProvider, { status: number; body: unknown }>()
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      const provider = PROVIDERS.find((name) => url.pathname.startsWith(`/${name}/`))
      if (!provider) return new Response('unknown provider', { status: 404 })
      const path = url.pathname.slice(provider.length + 1)
      const text = await request.text()
      const body = text === '' ? undefined : JSON.parse(text)
      requests.push({ provider, method: request.method, path, headers: request.headers, body })
      const failure = failures.get(provider)
      if (failure) {
        failures.delete(provider)
        return Response.json(failure.body, { status: failure.status })
      }
      return normalAnswer(provider, request.method, path, body ?? {})
    },
  })
  const base = `http://127.0.0.1:${server.port}`
  return {
    urls: Object.fromEntries(PROVIDERS.map((name) => [name, `${base}/${name}`])) as ProviderApiBaseUrls,
    requests,
    failNext: (provider, status, body) => {
      failures.set(provider, { status, body })
    },
    stop: () => {
      server.stop(true)
    },
  }
}
