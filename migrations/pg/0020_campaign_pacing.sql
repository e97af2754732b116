-- PostgreSQL twin of migrations/0020_campaign_pacing.sql: a campaign's dial pacing lives with the campaign, so every
-- instance dialling it shares one rhythm (src/campaigns/pacer.ts, times in ms); the schedule opening the last
-- `outside_schedule` entry announced.
ALTER TABLE campaigns
  ADD COLUMN dial_rhythm_rate BIGINT,
  ADD COLUMN dial_rhythm_started_at BIGINT,
  ADD COLUMN dial_rhythm_dials BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN last_dial_at BIGINT,
  ADD COLUMN outside_schedule_logged_for BIGINT;

-- The dialler reads a campaign's runs latest first (the start `rate` dials back): SQLite's index on campaign_id holds
-- the rowid, PostgreSQL's needs the id spelled out to serve that order.
DROP INDEX workflow_runs_campaign;
CREATE INDEX workflow_runs_campaign ON workflow_runs(campaign_id, id) WHERE campaign_id IS NOT NULL;
