-- Agents (workflows), their versions and trigger paths, and runs (one per call or chat session).

CREATE TABLE workflows (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  workflow_uuid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  -- JSON array of the disposition codes its runs have ended with.
  call_disposition_codes TEXT NOT NULL DEFAULT '[]',
  -- Kept by the workflow_runs triggers below.
  total_runs INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  -- Target of the (id, organization_id) foreign keys: a row can only point at a workflow of its own organization.
  UNIQUE (id, organization_id)
);
CREATE INDEX workflows_org ON workflows(organization_id, status);

-- At most one draft and one published version per workflow; older published versions become archived.
CREATE TABLE workflow_definitions (
  id INTEGER PRIMARY KEY,
  workflow_id INTEGER NOT NULL,
  organization_id INTEGER NOT NULL,
  version_number INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('draft', 'published', 'archived')),
  workflow_json TEXT NOT NULL,
  workflow_configurations TEXT NOT NULL,
  template_context_variables TEXT NOT NULL,
  created_at TEXT NOT NULL,
  published_at TEXT,
  FOREIGN KEY (workflow_id, organization_id) REFERENCES workflows(id, organization_id),
  UNIQUE (workflow_id, version_number),
  UNIQUE (id, workflow_id)
);
CREATE UNIQUE INDEX workflow_definitions_draft ON workflow_definitions(workflow_id) WHERE status = 'draft';
CREATE UNIQUE INDEX workflow_definitions_published ON workflow_definitions(workflow_id) WHERE status = 'published';

-- Trigger paths are unique in the installation. A path stays with the workflow that first saved it, even after its
-- trigger node is removed, so an old link can never start another agent.
CREATE TABLE workflow_triggers (
  trigger_path TEXT PRIMARY KEY,
  workflow_id INTEGER NOT NULL,
  organization_id INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  FOREIGN KEY (workflow_id, organization_id) REFERENCES workflows(id, organization_id)
) WITHOUT ROWID;
CREATE INDEX workflow_triggers_workflow ON workflow_triggers(workflow_id);

CREATE TABLE workflow_runs (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL,
  workflow_id INTEGER NOT NULL,
  -- The version the run executes, bound at creation.
  definition_id INTEGER NOT NULL,
  name TEXT NOT NULL,
  -- Provider name (ari, twilio, ...) or webrtc, smallwebrtc, textchat.
  mode TEXT NOT NULL,
  call_type TEXT NOT NULL CHECK (call_type IN ('inbound', 'outbound')),
  state TEXT NOT NULL DEFAULT 'initialized' CHECK (state IN ('initialized', 'running', 'completed')),
  campaign_id INTEGER,
  campaign_contact_id INTEGER,
  telephony_configuration_id INTEGER,
  initial_context TEXT NOT NULL DEFAULT '{}',
  gathered_context TEXT NOT NULL DEFAULT '{}',
  -- Set when the run finishes; runs with usage are the ones the usage report lists.
  usage_info TEXT,
  cost_info TEXT,
  logs TEXT NOT NULL DEFAULT '{}',
  annotations TEXT NOT NULL DEFAULT '{}',
  -- Object-store keys of the artifacts.
  recording_key TEXT,
  user_recording_key TEXT,
  bot_recording_key TEXT,
  transcript_key TEXT,
  public_access_token TEXT UNIQUE,
  public_access_expires_at TEXT,
  created_at TEXT NOT NULL,
  started_at TEXT,
  completed_at TEXT,
  -- Columns the run filters read, stored so that no filter parses JSON.
  caller_number TEXT GENERATED ALWAYS AS (json_extract(initial_context, '$.caller_number')) STORED,
  called_number TEXT GENERATED ALWAYS AS (coalesce(json_extract(initial_context, '$.called_number'), json_extract(initial_context, '$.phone_number'))) STORED,
  disposition TEXT GENERATED ALWAYS AS (json_extract(gathered_context, '$.mapped_call_disposition')) STORED,
  call_duration_seconds REAL GENERATED ALWAYS AS (CASE WHEN usage_info IS NOT NULL THEN coalesce(json_extract(usage_info, '$.call_duration_seconds'), 0) END) STORED,
  service_token_usage INTEGER GENERATED ALWAYS AS (coalesce(json_extract(cost_info, '$.service_token_usage'), 0)) STORED,
  -- The usage filter callChannel: run modes grouped by channel (null for a mode of no group).
  channel TEXT GENERATED ALWAYS AS (CASE
    WHEN mode IN ('ari', 'cloudonix', 'exotel', 'plivo', 'telnyx', 'twilio', 'vobiz', 'vonage', 'whatsapp', 'stasis', 'VOICE') THEN 'telephony'
    WHEN mode IN ('webrtc', 'smallwebrtc') THEN 'web'
    WHEN mode IN ('textchat', 'CHAT') THEN 'chat'
  END) VIRTUAL,
  FOREIGN KEY (workflow_id, organization_id) REFERENCES workflows(id, organization_id),
  FOREIGN KEY (definition_id, workflow_id) REFERENCES workflow_definitions(id, workflow_id)
);
CREATE INDEX workflow_runs_workflow ON workflow_runs(workflow_id, created_at);
CREATE INDEX workflow_runs_campaign ON workflow_runs(campaign_id) WHERE campaign_id IS NOT NULL;
-- The usage report: one index per filter, each ending in created_at so the default order needs no sort.
CREATE INDEX workflow_runs_usage ON workflow_runs(organization_id, created_at) WHERE usage_info IS NOT NULL;
CREATE INDEX workflow_runs_usage_duration ON workflow_runs(organization_id, call_duration_seconds) WHERE usage_info IS NOT NULL;
CREATE INDEX workflow_runs_usage_workflow ON workflow_runs(organization_id, workflow_id, created_at) WHERE usage_info IS NOT NULL;
CREATE INDEX workflow_runs_usage_campaign ON workflow_runs(organization_id, campaign_id, created_at) WHERE usage_info IS NOT NULL;
CREATE INDEX workflow_runs_usage_disposition ON workflow_runs(organization_id, disposition, created_at) WHERE usage_info IS NOT NULL;
CREATE INDEX workflow_runs_usage_call_type ON workflow_runs(organization_id, call_type, created_at) WHERE usage_info IS NOT NULL;
CREATE INDEX workflow_runs_usage_channel ON workflow_runs(organization_id, channel, created_at) WHERE usage_info IS NOT NULL;

-- Substring search on caller and called numbers (usage filters callerNumber / calledNumber): trigrams of both.
CREATE VIRTUAL TABLE workflow_run_numbers USING fts5(
  caller_number, called_number, content = '', contentless_delete = 1, tokenize = 'trigram'
);

-- Runs with usage per organization, direction and channel: the unfiltered usage total without counting rows.
CREATE TABLE usage_run_counts (
  organization_id INTEGER NOT NULL,
  call_type TEXT NOT NULL,
  channel TEXT NOT NULL,
  runs INTEGER NOT NULL,
  PRIMARY KEY (organization_id, call_type, channel)
) WITHOUT ROWID;

CREATE TRIGGER workflow_runs_inserted AFTER INSERT ON workflow_runs BEGIN
  UPDATE workflows SET total_runs = total_runs + 1 WHERE id = NEW.workflow_id;
  INSERT INTO workflow_run_numbers (rowid, caller_number, called_number)
    SELECT NEW.id, NEW.caller_number, NEW.called_number WHERE NEW.caller_number IS NOT NULL OR NEW.called_number IS NOT NULL;
  INSERT INTO usage_run_counts (organization_id, call_type, channel, runs)
    SELECT NEW.organization_id, NEW.call_type, coalesce(NEW.channel, ''), 1 WHERE NEW.usage_info IS NOT NULL
    ON CONFLICT DO UPDATE SET runs = runs + 1;
END;

CREATE TRIGGER workflow_runs_usage_changed AFTER UPDATE OF usage_info ON workflow_runs
WHEN (OLD.usage_info IS NULL) <> (NEW.usage_info IS NULL) BEGIN
  INSERT INTO usage_run_counts (organization_id, call_type, channel, runs)
    VALUES (NEW.organization_id, NEW.call_type, coalesce(NEW.channel, ''), CASE WHEN NEW.usage_info IS NULL THEN -1 ELSE 1 END)
    ON CONFLICT DO UPDATE SET runs = runs + excluded.runs;
END;

CREATE TRIGGER workflow_runs_numbers_changed AFTER UPDATE OF initial_context ON workflow_runs
WHEN NEW.caller_number IS NOT OLD.caller_number OR NEW.called_number IS NOT OLD.called_number BEGIN
  DELETE FROM workflow_run_numbers WHERE rowid = OLD.id;
  INSERT INTO workflow_run_numbers (rowid, caller_number, called_number)
    SELECT NEW.id, NEW.caller_number, NEW.called_number WHERE NEW.caller_number IS NOT NULL OR NEW.called_number IS NOT NULL;
END;

CREATE TRIGGER workflow_runs_deleted AFTER DELETE ON workflow_runs BEGIN
  UPDATE workflows SET total_runs = total_runs - 1 WHERE id = OLD.workflow_id;
  DELETE FROM workflow_run_numbers WHERE rowid = OLD.id;
  UPDATE usage_run_counts SET runs = runs - 1
    WHERE OLD.usage_info IS NOT NULL AND organization_id = OLD.organization_id AND call_type = OLD.call_type AND channel = coalesce(OLD.channel, '');
END;
