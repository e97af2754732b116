-- Facts of the installation as a whole. `master_key_check` tells whether a starting instance's master key is the one
-- the stored secrets were sealed with (several instances share one PostgreSQL database; each has its own data dir).
CREATE TABLE installation (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
