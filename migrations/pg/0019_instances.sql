-- PostgreSQL twin of migrations/0019_instances.sql.
CREATE TABLE instances (
  id TEXT PRIMARY KEY,
  started_at TEXT NOT NULL,
  heartbeat_at TEXT NOT NULL,
  version TEXT NOT NULL,
  hostname TEXT NOT NULL
);

CREATE TABLE ari_leases (
  telephony_configuration_id BIGINT PRIMARY KEY,
  instance_id TEXT NOT NULL,
  expires_at TEXT NOT NULL
);

ALTER TABLE workflow_runs ADD COLUMN instance_id TEXT;
CREATE INDEX workflow_runs_open_instance ON workflow_runs(instance_id) WHERE state <> 'completed';
