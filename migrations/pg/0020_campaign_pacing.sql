-- PostgreSQL twin of migrations/0020_campaign_pacing.sql: a campaign's dial pacing lives with the campaign, so every
-- instance dialling it shares one rhythm (src/campaigns/pacer.ts); times in ms.
ALTER TABLE campaigns ADD COLUMN dial_rhythm_rate BIGINT;
ALTER TABLE campaigns ADD COLUMN dial_rhythm_started_at BIGINT;
ALTER TABLE campaigns ADD COLUMN dial_rhythm_dials BIGINT NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN last_dial_at BIGINT;
ALTER TABLE campaigns ADD COLUMN outside_schedule_logged_for BIGINT;
