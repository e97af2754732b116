import { sql, type Column, type SQL } from 'drizzle-orm'

/** `column + by`, for a builder's `.set({...})`: the increment happens in the statement, so concurrent writers add up. */
export const incremented = (column: Column, by = 1): SQL => sql`${column} + ${by}`
