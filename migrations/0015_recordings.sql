-- Workflow recordings: audio an agent plays instead of speaking (greetings, transitions, tool messages, chosen clips).
-- `recording_id` is the one name agents, tools, CSV rows and prompts use; the line audio (8 kHz µ-law) is decoded
-- once at creation and kept beside the uploaded file.
CREATE TABLE workflow_recordings (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  recording_id TEXT NOT NULL,
  transcript TEXT NOT NULL DEFAULT '',
  storage_key TEXT NOT NULL UNIQUE,
  line_audio_key TEXT NOT NULL,
  duration_ms INTEGER NOT NULL,
  source_format TEXT NOT NULL,
  tts_provider TEXT,
  tts_model TEXT,
  tts_voice_id TEXT,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_by INTEGER,
  created_at TEXT NOT NULL,
  UNIQUE (organization_id, recording_id)
);
