-- When what an upload was granted for (a campaign, a knowledge-base document, a recording) took it. An upload never
-- taken is removed a day after its grant (src/storage/uploads.ts). Earlier uploads count as taken: what took them was
-- not recorded, and none is removed.
ALTER TABLE uploads ADD COLUMN used_at TEXT;
UPDATE uploads SET used_at = created_at;
CREATE INDEX uploads_unused ON uploads (used_at, created_at);
