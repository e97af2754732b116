import { networkInterfaces } from 'node:os'

/**
 * Where HTTP tools may send requests: hosts on the organization's allow-list (any host when it has none), and never
 * this appliance itself (the address it listens on, or its public URL), so a tool cannot drive the appliance's own API.
 */

export type ApplianceAddress = { listenHost: string; listenPort: number; publicUrl: string }

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 }

export const effectivePort = (url: URL): number => (url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol] ?? 0)

/** Lower-case, IPv6 brackets removed. */
export const bareHost = (host: string): string => host.toLowerCase().replace(/^\[(.*)\]$/, '$1')

/**
 * `host`, `host:port` and `*.domain` (subdomains only) entries; an entry without a port allows every port.
 * IPv6 entries are bracketed, as in URLs: `[::1]:9000`.
 */
export function hostAllowed(url: URL, allowedHosts: readonly string[] | null): boolean {
  if (allowedHosts === null) return true
  const host = bareHost(url.hostname)
  const port = effectivePort(url)
  return allowedHosts.some((entry) => {
    const [, name, entryPort] = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry) ?? /^([^:]+)(?::(\d+))?$/.exec(entry) ?? []
    if (name === undefined || (entryPort !== undefined && Number(entryPort) !== port)) return false
    const pattern = name.toLowerCase()
    return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern
  })
}

const isLoopback = (address: string) => /^127\./.test(address) || address === '::1' || address === 'localhost' || /^::ffff:127\./.test(address)

/** The machine's own addresses: what a socket bound to 0.0.0.0 or :: answers on. */
function localAddresses(): Set<string> {
  const addresses = Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => bareHost(entry.address)))
  return new Set([...addresses, '0.0.0.0', '::'])
}

/**
 * Whether `url` reaches this appliance: its public URL's host and port, or the port it listens on at the address it
 * listens on (any local address when that is 0.0.0.0 or ::). `resolved` are the addresses the URL's host name
 * resolves to (empty for an IP literal).
 */
export function targetsAppliance(url: URL, resolved: readonly string[], appliance: ApplianceAddress): boolean {
  const host = bareHost(url.hostname)
  const port = effectivePort(url)
  const publicUrl = new URL(appliance.publicUrl)
  if (host === bareHost(publicUrl.hostname) && port === effectivePort(publicUrl)) return true
  if (port !== appliance.listenPort) return false
  const listen = bareHost(appliance.listenHost)
  const candidates = [host, ...resolved.map(bareHost)]
  if (listen === '0.0.0.0' || listen === '::') {
    const local = localAddresses()
    return candidates.some((candidate) => isLoopback(candidate) || local.has(candidate))
  }
  return candidates.some((candidate) => candidate === listen || (isLoopback(listen) && candidate === 'localhost'))
}
