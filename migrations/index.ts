// Every migration, in order. Imported as text so `bun build --compile` embeds them in the binary.
// A shipped migration is never edited: add a new file and a new line here.
import core from './0001_core.sql' with { type: 'text' }
import agentsRuns from './0002_agents_runs.sql' with { type: 'text' }
import telephony from './0003_telephony.sql' with { type: 'text' }
import campaigns from './0004_campaigns.sql' with { type: 'text' }
import calls from './0005_calls.sql' with { type: 'text' }
import credentials from './0006_credentials.sql' with { type: 'text' }
import models from './0007_models.sql' with { type: 'text' }
import webhookOutbox from './0008_webhook_outbox.sql' with { type: 'text' }
import tools from './0009_tools.sql' with { type: 'text' }
import carriers from './0010_carriers.sql' with { type: 'text' }
import hardening from './0011_hardening.sql' with { type: 'text' }
import sessions from './0012_sessions.sql' with { type: 'text' }
import knowledgeBase from './0013_knowledge_base.sql' with { type: 'text' }
import mcpTools from './0014_mcp_tools.sql' with { type: 'text' }
import recordings from './0015_recordings.sql' with { type: 'text' }
import connectionChecks from './0016_connection_checks.sql' with { type: 'text' }
import realtimeModels from './0017_realtime_models.sql' with { type: 'text' }
import webCalls from './0018_web_calls.sql' with { type: 'text' }
import instances from './0019_instances.sql' with { type: 'text' }
import campaignPacing from './0020_campaign_pacing.sql' with { type: 'text' }
import installation from './0021_installation.sql' with { type: 'text' }
import campaignImports from './0022_campaign_imports.sql' with { type: 'text' }
import unusedUploads from './0023_unused_uploads.sql' with { type: 'text' }

export type Migration = { name: string; sql: string }

export const MIGRATIONS: Migration[] = [
  { name: '0001_core', sql: core },
  { name: '0002_agents_runs', sql: agentsRuns },
  { name: '0003_telephony', sql: telephony },
  { name: '0004_campaigns', sql: campaigns },
  { name: '0005_calls', sql: calls },
  { name: '0006_credentials', sql: credentials },
  { name: '0007_models', sql: models },
  { name: '0008_webhook_outbox', sql: webhookOutbox },
  { name: '0009_tools', sql: tools },
  { name: '0010_carriers', sql: carriers },
  { name: '0011_hardening', sql: hardening },
  { name: '0012_sessions', sql: sessions },
  { name: '0013_knowledge_base', sql: knowledgeBase },
  { name: '0014_mcp_tools', sql: mcpTools },
  { name: '0015_recordings', sql: recordings },
  { name: '0016_connection_checks', sql: connectionChecks },
  { name: '0017_realtime_models', sql: realtimeModels },
  { name: '0018_web_calls', sql: webCalls },
  { name: '0019_instances', sql: instances },
  { name: '0020_campaign_pacing', sql: campaignPacing },
  { name: '0021_installation', sql: installation },
  { name: '0022_campaign_imports', sql: campaignImports },
  { name: '0023_unused_uploads', sql: unusedUploads },
]
