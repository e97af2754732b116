-- Tools may be MCP servers (category 'mcp'): SQLite cannot change a CHECK constraint, so the table is rebuilt.

CREATE TABLE tools_new (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  tool_uuid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  description TEXT,
  -- Always equal to definition's type.
  category TEXT NOT NULL CHECK (category IN ('http_api', 'end_call', 'transfer_call', 'calculator', 'mcp')),
  icon TEXT,
  icon_color TEXT,
  -- DELETE archives: runs and agent versions keep naming the tool.
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  -- JSON {schema_version, type, config}.
  definition TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
INSERT INTO tools_new SELECT id, organization_id, tool_uuid, name, description, category, icon, icon_color, status, definition, created_at, updated_at FROM tools;
DROP TABLE tools;
ALTER TABLE tools_new RENAME TO tools;
CREATE INDEX tools_org ON tools(organization_id, status);
