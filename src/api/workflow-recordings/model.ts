import { t } from 'elysia'
import { MAX_NAME_LENGTH } from '../../lib/limits'
import { MAX_RECORDING_BYTES, RECORDING_CONTENT_TYPES } from '../../recordings/service'

const RecordingName = t.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9_-]+$',
  description: 'The name agents, tools, CSV rows and prompts use',
})
const Optional = (schema: ReturnType<typeof t.String>) => t.Optional(t.Union([schema, t.Null()]))

export const UploadUrlBody = t.Object({
  files: t.Array(
    t.Object({
      filename: t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }),
      mime_type: t.Optional(
        t.Union(
          RECORDING_CONTENT_TYPES.map((type) => t.Literal(type)),
          { default: 'audio/wav', description: 'WAV; the PUT must send this Content-Type' },
        ),
      ),
      file_size: t.Integer({
        minimum: 1,
        maximum: MAX_RECORDING_BYTES,
        description: 'Size in bytes; the upload may not exceed it',
      }),
    }),
    { minItems: 1, maxItems: 20 },
  ),
})

export const UploadUrlResponse = t.Object({
  items: t.Array(
    t.Object({
      upload_url: t.String({ description: 'PUT the file here with its Content-Type; no API key needed' }),
      recording_id: t.String({ description: 'A free name to create the recording with (any free name is accepted)' }),
      storage_key: t.String(),
      expires_in: t.Integer(),
    }),
  ),
})

const Transcript = t.String({
  maxLength: 10_000,
  description: "What the recording says: the agent's turn in transcripts and the model's context",
})

export const CreateRecordingsBody = t.Object({
  recordings: t.Array(
    t.Object({
      recording_id: RecordingName,
      transcript: t.Optional(Transcript),
      storage_key: t.String({ maxLength: 1000, description: 'From the upload URL answer, once the PUT succeeded' }),
      tts_provider: Optional(t.String({ maxLength: MAX_NAME_LENGTH })),
      tts_model: Optional(t.String({ maxLength: MAX_NAME_LENGTH })),
      tts_voice_id: Optional(t.String({ maxLength: MAX_NAME_LENGTH })),
      metadata: t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()])),
    }),
    { minItems: 1, maxItems: 20 },
  ),
})

export const RecordingView = t.Object({
  id: t.Integer(),
  recording_id: t.String(),
  workflow_id: t.Null(),
  organization_id: t.Integer(),
  transcript: t.String(),
  storage_key: t.String(),
  storage_backend: t.String(),
  duration_ms: t.Integer({ description: 'Length of the audio as played (silence around it trimmed)' }),
  source_format: t.Object({
    container: t.String(),
    encoding: t.String(),
    sample_rate: t.Integer(),
    channels: t.Integer(),
  }),
  tts_provider: t.Union([t.String(), t.Null()]),
  tts_model: t.Union([t.String(), t.Null()]),
  tts_voice_id: t.Union([t.String(), t.Null()]),
  metadata: t.Record(t.String(), t.Unknown()),
  created_by: t.Union([t.Integer(), t.Null()]),
  created_at: t.String(),
  is_active: t.Boolean(),
})

export const RecordingList = t.Object({ recordings: t.Array(RecordingView), total: t.Integer() })

export const ListQuery = t.Object({
  workflow_id: t.Optional(t.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  tts_provider: t.Optional(t.String({ maxLength: MAX_NAME_LENGTH })),
  tts_model: t.Optional(t.String({ maxLength: MAX_NAME_LENGTH })),
  tts_voice_id: t.Optional(t.String({ maxLength: MAX_NAME_LENGTH })),
})

export const RecordingIdParam = t.Object({ recording_id: t.String({ maxLength: 64 }) })
export const UpdateBody = t.Object({
  recording_id: RecordingName,
  transcript: t.Optional(
    t.String({
      maxLength: 10_000,
      description: 'A new transcript (the reference renames only): used by the runs that start from now on',
    }),
  ),
})

export const TranscribeBody = t.Object({
  storage_key: t.String({ maxLength: 1000, description: 'A completed upload from POST /upload-url' }),
  language: t.Optional(
    t.String({ maxLength: 16, description: 'Language code; `multi` or absent lets the model detect it' }),
  ),
})

export const TranscribeResponse = t.Object({ transcript: t.String() })
