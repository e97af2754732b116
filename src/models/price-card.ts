import { eq } from 'drizzle-orm'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { organizationPriceCards } from '../db/schema'
import { isoNow } from '../lib/clock'
import type { PriceCardSchema, PriceCardView } from './schemas'
import type { PriceCard } from './usage'

/** An organization's optional price card: what cost_info is computed from when its runs finish. */

type View = Static<typeof PriceCardView>

export function readPriceCard(ctx: AppContext, organizationId: number): PriceCard | null {
  const row = ctx.db
    .select()
    .from(organizationPriceCards)
    .where(eq(organizationPriceCards.organizationId, organizationId))
    .get()
  return row ? (row.card as PriceCard) : null
}

export function getPriceCard(ctx: AppContext, organizationId: number): View {
  const row = ctx.db
    .select()
    .from(organizationPriceCards)
    .where(eq(organizationPriceCards.organizationId, organizationId))
    .get()
  return { price_card: row ? (row.card as View['price_card']) : null, updated_at: row?.updatedAt ?? null }
}

/** Replaces the card; runs finishing from now on are priced with it (finished runs keep their cost_info). */
export function setPriceCard(ctx: AppContext, organizationId: number, card: Static<typeof PriceCardSchema>): View {
  const updatedAt = isoNow(ctx.clock)
  ctx.db
    .insert(organizationPriceCards)
    .values({ organizationId, card, updatedAt })
    .onConflictDoUpdate({ target: organizationPriceCards.organizationId, set: { card, updatedAt } })
    .run()
  return getPriceCard(ctx, organizationId)
}

export function deletePriceCard(ctx: AppContext, organizationId: number): View {
  ctx.db.delete(organizationPriceCards).where(eq(organizationPriceCards.organizationId, organizationId)).run()
  return getPriceCard(ctx, organizationId)
}
