import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail, IdParam, SuccessMessage } from '../schemas'
import {
  createRecordings,
  createUploadUrls,
  deleteRecording,
  listRecordings,
  recordingAudioWav,
  updateRecording,
  transcribeUpload,
} from '../../recordings/service'
import {
  CreateRecordingsBody,
  ListQuery,
  RecordingIdParam,
  RecordingList,
  RecordingView,
  UpdateBody,
  TranscribeBody,
  TranscribeResponse,
  UploadUrlBody,
  UploadUrlResponse,
} from './model'

const tags = ['Recordings']
const recordingErrors = { 404: ErrorDetail, 409: ErrorDetail, ...authErrors }

export const workflowRecordingRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/workflow-recordings' })
    .use(auth(ctx))
    .post('/upload-url', ({ principal, body }) => createUploadUrls(ctx, principal.organizationId, body.files), {
      body: UploadUrlBody,
      response: { 200: UploadUrlResponse, ...authErrors },
      detail: { tags, summary: 'Get signed URLs to upload recordings (WAV, at most 5 MiB each)' },
    })
    .post(
      '/',
      ({ principal, body }) => createRecordings(ctx, principal.organizationId, principal.apiKeyId, body.recordings),
      {
        body: CreateRecordingsBody,
        response: { 200: t.Object({ recordings: t.Array(RecordingView) }), 409: ErrorDetail, ...authErrors },
        detail: {
          tags,
          summary: 'Create recordings from uploaded files: each is decoded once into call audio (all or none)',
        },
      },
    )
    .post('/transcribe', ({ principal, body }) => transcribeUpload(ctx, principal.organizationId, body), {
      body: TranscribeBody,
      response: { 200: TranscribeResponse, 400: ErrorDetail, 502: ErrorDetail, ...authErrors },
      detail: {
        tags,
        summary: "Transcribe an uploaded recording file with the organization's speech to text (nothing is stored)",
      },
    })
    .get('/', ({ principal, query }) => listRecordings(ctx, principal.organizationId, query), {
      query: ListQuery,
      response: { 200: RecordingList, ...authErrors },
      detail: { tags, summary: "List the organization's recordings, newest first" },
    })
    .get(
      '/:recording_id/audio',
      ({ principal, params }) => recordingAudioWav(ctx, principal.organizationId, params.recording_id),
      {
        params: RecordingIdParam,
        response: {
          200: t.Unknown({ description: 'The audio as a WAV: 16 kHz mono 16-bit PCM' }),
          404: ErrorDetail,
          ...authErrors,
        },
        detail: { tags, summary: "A recording's audio as stored for playing (16 kHz mono PCM), as a WAV" },
      },
    )
    .patch('/:id', ({ principal, params, body }) => updateRecording(ctx, principal.organizationId, params.id, body), {
      params: IdParam('id'),
      body: UpdateBody,
      response: { 200: RecordingView, ...recordingErrors },
      detail: {
        tags,
        summary:
          'Rename a recording (by its numeric id; refused while an agent or tool names it) and/or change its transcript',
      },
    })
    .delete(
      '/:recording_id',
      ({ principal, params }) => deleteRecording(ctx, principal.organizationId, params.recording_id),
      {
        params: RecordingIdParam,
        response: { 200: SuccessMessage, ...recordingErrors },
        detail: { tags, summary: 'Delete a recording and its audio; refused while an agent or tool names it' },
      },
    )
