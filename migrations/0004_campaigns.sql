-- Contacts uploads, campaigns, their contacts (one row per CSV line) and their log.

CREATE TABLE uploads (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  file_key TEXT NOT NULL UNIQUE,
  file_name TEXT NOT NULL,
  content_type TEXT NOT NULL,
  declared_size INTEGER NOT NULL,
  size INTEGER,
  created_at TEXT NOT NULL,
  completed_at TEXT
);
CREATE INDEX uploads_org ON uploads(organization_id, id);

CREATE TABLE campaigns (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL,
  workflow_id INTEGER REFERENCES workflows(id),
  -- 'importing' is internal: the create request is still streaming its CSV; such rows are invisible and removed at boot.
  state TEXT NOT NULL CHECK (state IN ('importing', 'draft', 'running', 'paused', 'stopped', 'completed', 'failed')),
  source_type TEXT NOT NULL,
  source_id TEXT NOT NULL,
  total_rows INTEGER,
  processed_rows INTEGER NOT NULL DEFAULT 0,
  failed_rows INTEGER NOT NULL DEFAULT 0,
  executed_count INTEGER NOT NULL DEFAULT 0,
  total_queued_count INTEGER NOT NULL DEFAULT 0,
  retry_config TEXT NOT NULL,
  traffic_split TEXT,
  allocation_seed TEXT NOT NULL,
  max_concurrency INTEGER,
  rate_limit_per_second INTEGER NOT NULL DEFAULT 1,
  schedule_config TEXT,
  circuit_breaker TEXT NOT NULL,
  -- Outcomes before this instant do not count for the circuit breaker (resume starts from a clean slate).
  breaker_window_reset_at INTEGER NOT NULL DEFAULT 0,
  parent_campaign_id INTEGER REFERENCES campaigns(id),
  redialed_campaign_id INTEGER REFERENCES campaigns(id),
  telephony_configuration_id INTEGER REFERENCES telephony_configurations(id),
  created_at TEXT NOT NULL,
  started_at TEXT,
  completed_at TEXT,
  updated_at TEXT NOT NULL
);
CREATE INDEX campaigns_org ON campaigns(organization_id, id);
CREATE INDEX campaigns_state ON campaigns(state);
CREATE INDEX campaigns_telephony ON campaigns(telephony_configuration_id);

-- No foreign key on campaign_id: rows are only written by the CSV import of their campaign, and the per-row parent check
-- cost 6 % of import speed. Code that deletes a campaign deletes its contacts (src/campaigns/contacts.ts).
CREATE TABLE campaign_contacts (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL,
  organization_id INTEGER NOT NULL,
  -- 1-based CSV line, the header being line 1.
  row_number INTEGER NOT NULL,
  phone_number TEXT NOT NULL,
  context TEXT NOT NULL,
  greeting_override TEXT,
  -- queued: waiting for its first or next attempt (next_attempt_at); dialing: an attempt is claimed and not settled;
  -- done: no more attempts; cancelled: the campaign was stopped first.
  state TEXT NOT NULL CHECK (state IN ('queued', 'dialing', 'done', 'cancelled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_outcome TEXT,
  last_run_id INTEGER,
  variant_id TEXT,
  UNIQUE (campaign_id, phone_number)
);
CREATE INDEX campaign_contacts_due ON campaign_contacts(campaign_id, state, next_attempt_at, id);

CREATE TABLE campaign_logs (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  ts TEXT NOT NULL,
  level TEXT NOT NULL CHECK (level IN ('info', 'warning', 'error')),
  event TEXT NOT NULL,
  message TEXT NOT NULL,
  details TEXT
);
CREATE INDEX campaign_logs_campaign ON campaign_logs(campaign_id, id);
