-- Browser sessions of the console: made from an API key (same organization, same scope), stored as the hash of the
-- cookie's token, valid until expires_at or until the key is archived.
CREATE TABLE sessions (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  api_key_id INTEGER NOT NULL REFERENCES api_keys(id),
  token_hash TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expires_at);
