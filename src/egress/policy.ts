import type { AppContext } from '../context'
import { getToolSettings } from './allowed-hosts'
import { targetsAppliance, type ApplianceAddress } from './network-policy'
import type { OutboundPolicy } from './outbound'

/**
 * The rules in force for an organization's outbound requests (HTTP tools, webhook nodes, pre-call fetch): its allow-list
 * (set through tool-settings, which governs all three), read at each request, and this appliance's addresses.
 */

export const applianceAddress = (ctx: AppContext): ApplianceAddress => ({
  listenHost: ctx.config.httpHost,
  listenPort: ctx.config.httpPort,
  publicUrl: ctx.config.publicUrl,
})

export function outboundPolicy(ctx: AppContext, organizationId: number): OutboundPolicy {
  return {
    allowedHosts: getToolSettings(ctx, organizationId).allowed_hosts,
    appliance: applianceAddress(ctx),
    resolve: ctx.resolveHost,
  }
}

/** Why a URL that names this server is refused on save. */
export const THIS_SERVER_MESSAGE = 'This URL is this Ringbase server itself, which agents never call'

/**
 * Whether `url` is written to reach this appliance, asking no DNS: a literal address it listens on, `localhost`, or its
 * public URL's host, at the right port. What a name resolves to is checked when a request is sent.
 */
export function namesThisServer(ctx: AppContext, url: string): boolean {
  try {
    return targetsAppliance(new URL(url), [], applianceAddress(ctx))
  } catch {
    return false
  }
}
