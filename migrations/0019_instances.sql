-- Several Ringbase processes may share one database (docs/scale-out.md, "Several instances"). Each registers itself and
-- heartbeats; one that stops heartbeating is dead, and a live one recovers its open runs.
CREATE TABLE instances (
  id TEXT PRIMARY KEY,
  started_at TEXT NOT NULL,
  heartbeat_at TEXT NOT NULL,
  version TEXT NOT NULL,
  hostname TEXT NOT NULL
);

-- The instance that holds an ARI configuration's events connection, until expires_at (renewed while it lives).
CREATE TABLE ari_leases (
  telephony_configuration_id INTEGER PRIMARY KEY,
  instance_id TEXT NOT NULL,
  expires_at TEXT NOT NULL
);

-- The instance that handles a run (places or answers its call, runs its conversation); NULL for runs from before.
ALTER TABLE workflow_runs ADD COLUMN instance_id TEXT;
CREATE INDEX workflow_runs_open_instance ON workflow_runs(instance_id) WHERE state <> 'completed';
