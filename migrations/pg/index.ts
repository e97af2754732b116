// PostgreSQL's migrations, in order (src/db/open.ts applies them with --database-url). 0001 is SQLite's 0001–0018 as
// one baseline (scripts/postgres-baseline.ts); from 0019 on each SQLite migration has its twin here, of the same name.
// Imported as text so `bun build --compile` embeds them. A shipped migration is never edited.
import type { Migration } from '../index'
import schema from './0001_schema.sql' with { type: 'text' }
import runCounters from './0002_run_counters.sql' with { type: 'text' }
import instances from './0019_instances.sql' with { type: 'text' }
import campaignPacing from './0020_campaign_pacing.sql' with { type: 'text' }
import installation from './0021_installation.sql' with { type: 'text' }
import campaignImports from './0022_campaign_imports.sql' with { type: 'text' }
import unusedUploads from './0023_unused_uploads.sql' with { type: 'text' }

export const POSTGRES_MIGRATIONS: Migration[] = [
  { name: '0001_schema', sql: schema },
  { name: '0002_run_counters', sql: runCounters },
  { name: '0019_instances', sql: instances },
  { name: '0020_campaign_pacing', sql: campaignPacing },
  { name: '0021_installation', sql: installation },
  { name: '0022_campaign_imports', sql: campaignImports },
  { name: '0023_unused_uploads', sql: unusedUploads },
]
