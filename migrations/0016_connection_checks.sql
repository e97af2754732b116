-- The latest "check" of each model server (POST .../provider-connections/{uuid}/check), shown with the connection.
ALTER TABLE provider_connections ADD COLUMN last_check_ok INTEGER;
ALTER TABLE provider_connections ADD COLUMN last_check_at TEXT;
ALTER TABLE provider_connections ADD COLUMN last_check_error TEXT;
