import { eq } from 'drizzle-orm'
import type { AppContext } from '../context'
import { toolSettings } from '../db/schema'
import { isoNow } from '../lib/clock'
import { invalid } from '../lib/errors'
import { valueError } from '../lib/validation'

/**
 * An organization's rules for the HTTP requests its agents make (HTTP tools, webhook nodes, pre-call fetch; the name is
 * the shipped API's): which hosts they may reach (any, until set).
 */

export type ToolSettings = { allowed_hosts: string[] | null; updated_at: string | null }

export function getToolSettings(ctx: AppContext, organizationId: number): ToolSettings {
  const row = ctx.db.select().from(toolSettings).where(eq(toolSettings.organizationId, organizationId)).get()
  return { allowed_hosts: row?.allowedHosts ?? null, updated_at: row?.updatedAt ?? null }
}

export function putToolSettings(
  ctx: AppContext,
  organizationId: number,
  body: { allowed_hosts: string[] | null },
): ToolSettings {
  const badPort = body.allowed_hosts?.findIndex((host) => Number(/:(\d+)$/.exec(host)?.[1] ?? 0) > 65_535) ?? -1
  if (badPort >= 0)
    throw invalid([
      valueError(['body', 'allowed_hosts', badPort], 'a port is at most 65535', body.allowed_hosts![badPort]),
    ])
  const hosts = body.allowed_hosts === null ? null : [...new Set(body.allowed_hosts.map((host) => host.toLowerCase()))]
  const updatedAt = isoNow(ctx.clock)
  ctx.db
    .insert(toolSettings)
    .values({ organizationId, allowedHosts: hosts, updatedAt })
    .onConflictDoUpdate({ target: toolSettings.organizationId, set: { allowedHosts: hosts, updatedAt } })
    .run()
  return { allowed_hosts: hosts, updated_at: updatedAt }
}
