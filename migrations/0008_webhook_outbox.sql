-- Durable webhook deliveries (one per run and webhook node) and each organization's webhook signing secret.

CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY,
  -- Sent as X-Ringbase-Delivery-Id on every attempt, so receivers can drop repeats.
  delivery_uuid TEXT NOT NULL UNIQUE,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  run_id INTEGER NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
  -- The webhook node of the run's pinned definition; its URL, payload and credential are read when sending.
  node_id TEXT NOT NULL,
  -- held: waits for the run's QA review; pending: due at next_attempt_at; delivered and dead are final.
  state TEXT NOT NULL CHECK (state IN ('held', 'pending', 'delivered', 'dead')),
  attempts INTEGER NOT NULL DEFAULT 0,
  -- Epoch milliseconds; while an attempt is in flight, the time after which it counts as lost and is sent again.
  next_attempt_at INTEGER NOT NULL,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (run_id, node_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE state = 'pending';

CREATE TABLE webhook_signing_secrets (
  organization_id INTEGER PRIMARY KEY REFERENCES organizations(id),
  -- Sealed with the master key; shown once, when created.
  secret TEXT NOT NULL,
  -- The last 4 characters, to tell secrets apart.
  hint TEXT NOT NULL,
  created_at TEXT NOT NULL
);
