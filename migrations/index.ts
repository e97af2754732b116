// Every migration, in order. Imported as text so `bun build --compile` embeds them in the binary.
// A shipped migration is never edited: add a new file and a new line here.
import core from './0001_core.sql' with { type: 'text' }
import telephony from './0003_telephony.sql' with { type: 'text' }

export type Migration = { name: string; sql: string }

export const MIGRATIONS: Migration[] = [
  { name: '0001_core', sql: core },
  { name: '0003_telephony', sql: telephony },
]
