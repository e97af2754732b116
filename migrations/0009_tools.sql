-- Tools an organization's agents may call (HTTP requests, ending and transferring calls, arithmetic), and the
-- organization's rules for the HTTP requests tools make.

CREATE TABLE tools (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  tool_uuid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  description TEXT,
  -- Always equal to definition's type.
  category TEXT NOT NULL CHECK (category IN ('http_api', 'end_call', 'transfer_call', 'calculator')),
  icon TEXT,
  icon_color TEXT,
  -- DELETE archives: runs and agent versions keep naming the tool.
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  -- JSON {schema_version, type, config}.
  definition TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX tools_org ON tools(organization_id, status);

CREATE TABLE tool_settings (
  organization_id INTEGER PRIMARY KEY REFERENCES organizations(id),
  -- JSON array of hosts HTTP tools may call; NULL allows any host.
  allowed_hosts TEXT,
  updated_at TEXT NOT NULL
);
