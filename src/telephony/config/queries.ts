import { asc, eq, sql } from 'drizzle-orm'
import type { AppContext } from '../../context'
import { telephonyConfigurations } from '../../db/schema'
import { boundList, inBoundList, preparedQuery } from '../../db/prepared'
import type { SetupFacts } from './providers'

/** The configurations' statements with SQL of their own: the setup facts counted per configuration, prepared once. */

/** Drizzle writes columns without their table in a one-table query: these correlated subqueries name theirs. */
const activeNumbersWhere = (condition: string) => sql<number>`(SELECT count(*) FROM phone_numbers AS counted
  WHERE counted.telephony_configuration_id = ${sql.raw('"telephony_configurations"."id"')} AND counted.is_active = 1 AND ${sql.raw(condition)})`

/**
 * A configuration's setup facts as columns of a query over telephony_configurations (each a count over its phone
 * numbers or trunks, through their configuration indexes): listing configurations with them is one query.
 */
const setupFactColumns = {
  activeNumberCount: activeNumbersWhere('TRUE'),
  activeNumbersWithoutTrunkCount: activeNumbersWhere('counted.telephony_trunk_id IS NULL'),
  activeNumbersWithInboundAgentCount: activeNumbersWhere('counted.inbound_workflow_id IS NOT NULL'),
  enabledTrunkCount: sql<number>`(SELECT count(*) FROM trunks AS counted
    WHERE counted.telephony_configuration_id = ${sql.raw('"telephony_configurations"."id"')} AND counted.enabled = 1)`,
}

const setupFactsQuery = preparedQuery((db) =>
  db
    .select({ id: telephonyConfigurations.id, ...setupFactColumns })
    .from(telephonyConfigurations)
    .where(inBoundList(telephonyConfigurations.id, 'configurationIds'))
    .prepare(),
)

/** The counts each configuration's setup checklist is derived from, for several configurations in one query. */
export function setupFactsByConfiguration(ctx: AppContext, configurationIds: number[]): Map<number, SetupFacts> {
  if (configurationIds.length === 0) return new Map()
  const rows = setupFactsQuery(ctx.db).all({ configurationIds: boundList(configurationIds) })
  return new Map(rows.map(({ id, ...facts }) => [id, facts]))
}

const configurationListQuery = preparedQuery((db) =>
  db
    .select({ row: telephonyConfigurations, facts: setupFactColumns })
    .from(telephonyConfigurations)
    .where(eq(telephonyConfigurations.organizationId, sql.placeholder('organizationId')))
    .orderBy(asc(telephonyConfigurations.createdAt), asc(telephonyConfigurations.id))
    .prepare(),
)

/** The organization's configurations, oldest first, each with its setup facts. */
export const configurationsWithSetupFacts = (ctx: AppContext, organizationId: number) =>
  configurationListQuery(ctx.db).all({ organizationId })
