import { integer, sqliteTable, text, unique } from 'drizzle-orm/sqlite-core'

/** The uploaded file a recording was decoded from, as stored. */
export type SourceFormat = { container: 'wav' | 'mp3'; encoding: string; sample_rate: number; channels: number }

export const workflowRecordings = sqliteTable(
  'workflow_recordings',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id').notNull(),
    recordingId: text('recording_id').notNull(),
    transcript: text('transcript').notNull().default(''),
    storageKey: text('storage_key').notNull().unique(),
    lineAudioKey: text('line_audio_key').notNull(),
    durationMs: integer('duration_ms').notNull(),
    sourceFormat: text('source_format', { mode: 'json' }).$type<SourceFormat>().notNull(),
    ttsProvider: text('tts_provider'),
    ttsModel: text('tts_model'),
    ttsVoiceId: text('tts_voice_id'),
    metadata: text('metadata', { mode: 'json' }).$type<Record<string, unknown>>().notNull().default({}),
    createdBy: integer('created_by'),
    createdAt: text('created_at').notNull(),
  },
  (table) => [unique().on(table.organizationId, table.recordingId)],
)

export type WorkflowRecordingRow = typeof workflowRecordings.$inferSelect
