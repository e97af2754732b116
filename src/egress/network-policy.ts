import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'

/**
 * Where requests to admin-named URLs (HTTP tools, webhook nodes, pre-call fetch) may go: hosts on the organization's
 * allow-list (any host when it has none), and never this appliance itself (the address it listens on, or its public
 * URL), so an agent cannot drive the appliance's own API.
 */

export type ApplianceAddress = { listenHost: string; listenPort: number; publicUrl: string }

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 }

export const effectivePort = (url: URL): number => (url.port ? Number(url.port) : (DEFAULT_PORTS[url.protocol] ?? 0))

/** Lower-case, IPv6 brackets removed, and a name's root dot (`localhost.` is `localhost`). */
export const bareHost = (host: string): string =>
  host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/(?<=[^.])\.$/, '')

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

/** An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, or as URLs write it `::ffff:7f00:1`) as the IPv4 address it reaches. */
function unmapped(address: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(address)
  if (dotted) return dotted[1]
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(address)
  if (!hex) return address
  const [high, low] = [parseInt(hex[1], 16), parseInt(hex[2], 16)]
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.')
}

const isLoopback = (address: string) => /^127\./.test(address) || address === '::1' || address === 'localhost'

/** A connection to the unspecified address lands on the loopback address of its family. */
const UNSPECIFIED_REACHES: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1' }

/** The address a connection to `host` (a name or an address) really goes to, as the comparisons below need it. */
function reachedAddress(host: string): string {
  const bare = unmapped(bareHost(host))
  return UNSPECIFIED_REACHES[bare] ?? bare
}

/** The machine's own addresses: what a socket bound to 0.0.0.0 or :: answers on. */
function localAddresses(): Set<string> {
  return new Set(
    Object.values(networkInterfaces()).flatMap((entries) =>
      (entries ?? []).map((entry) => unmapped(bareHost(entry.address))),
    ),
  )
}

/**
 * Whether `url` reaches this appliance: its public URL's host and port, or the port it listens on at the address it
 * listens on (any local address when that is 0.0.0.0 or :: or a name such as `localhost`: a name we could bind to
 * resolves to some of our own addresses, and which ones is the resolver's business). `resolved` are the addresses the URL's host name
 * resolves to (empty for an IP literal): every one is checked, as the request may connect to any of them.
 * Another name that resolves to the public URL host's addresses is not refused: those are often a shared proxy's,
 * which routes by name.
 */
export function targetsAppliance(url: URL, resolved: readonly string[], appliance: ApplianceAddress): boolean {
  const port = effectivePort(url)
  const candidates = [url.hostname, ...resolved].map(reachedAddress)
  const publicUrl = new URL(appliance.publicUrl)
  if (port === effectivePort(publicUrl) && candidates.includes(reachedAddress(publicUrl.hostname))) return true
  if (port !== appliance.listenPort) return false
  const listen = unmapped(bareHost(appliance.listenHost))
  if (listen === '0.0.0.0' || listen === '::' || isIP(listen) === 0) {
    const local = localAddresses()
    return candidates.some((candidate) => isLoopback(candidate) || local.has(candidate))
  }
  return candidates.some((candidate) => candidate === listen || (isLoopback(listen) && candidate === 'localhost'))
}

/**
 * Whether `url` reaches this machine at all (any port): a loopback or unspecified address, or an address of one of its
 * interfaces, written or among `resolved` (the addresses its host name resolves to).
 */
export function reachesThisMachine(url: URL, resolved: readonly string[]): boolean {
  const local = localAddresses()
  return [url.hostname, ...resolved]
    .map(reachedAddress)
    .some((candidate) => isLoopback(candidate) || local.has(candidate))
}

/** Scheme and authority as written: the authority ends at the first `/`, `?`, `#` or `\\` (URL parsers read `\\` as `/`). */
const WRITTEN_AUTHORITY = /^(https?):\/\/([^/?#\\]*)/i

/**
 * Why `url` does not name its host as written, else null: http(s), a host right after `//`, no placeholder in it.
 * A host a template fills, or an empty authority (`http:///{{host}}:18912/x`, which URL parsers read as the host
 * `{{host}}`), would let the call's data pick where the request, and the credential it carries, go.
 */
export function hostNotWrittenOut(url: string): string | null {
  const authority = WRITTEN_AUTHORITY.exec(url)
  if (!authority) return 'the URL must start with http:// or https://'
  if (authority[2].includes('{{')) return "the URL's host cannot be a placeholder: write it out"
  if (authority[2] === '') return 'the URL needs a host right after //'
  return null
}
