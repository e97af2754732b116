-- The instance importing a campaign's contacts (state 'importing'): an import cut off by its instance's death is
-- removed, one still running on a live instance is left alone.
ALTER TABLE campaigns ADD COLUMN import_instance_id TEXT;
