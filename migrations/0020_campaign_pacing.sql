-- A campaign's dial pacing lives with the campaign, so every instance dialling it shares one rhythm
-- (src/campaigns/pacer.ts): the rate the rhythm runs at, its first dial, how many dials followed, and the last dial
-- (ms). The sliding one-second window is read from the campaign's runs, one per dial.
ALTER TABLE campaigns ADD COLUMN dial_rhythm_rate INTEGER;
ALTER TABLE campaigns ADD COLUMN dial_rhythm_started_at INTEGER;
ALTER TABLE campaigns ADD COLUMN dial_rhythm_dials INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN last_dial_at INTEGER;
-- The schedule opening (ms) the last `outside_schedule` log entry announced, -1 when it said none was near: one entry
-- per closed window whichever instance notices it.
ALTER TABLE campaigns ADD COLUMN outside_schedule_logged_for INTEGER;
