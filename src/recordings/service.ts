/**
 * Workflow recordings: audio an organization uploads once and its agents play instead of speaking. Upload through
 * a signed URL (storage/uploads.ts), then create: the file is decoded once into line audio (line-audio.ts), kept
 * beside it. Agents, tools and CSV rows name a recording by its `recording_id`; one still named cannot be renamed or
 * deleted (the reference platform rewrote prompts by prefix and left everything else dangling).
 */
import { transaction } from '../db/transaction'
import { and, desc, eq, inArray, ne } from 'drizzle-orm'
import type { AppContext } from '../context'
import type { AgentDefinition, DefinitionError } from '../definition/definition'
import { tools, workflowRecordings, type WorkflowRecordingRow } from '../db/schema'
import { conflict, invalid, notFound, refused, upstreamFailed } from '../lib/errors'
import { isoNow } from '../lib/clock'
import { valueError, type ValidationItem } from '../lib/validation'
import { completedUploadSize, markUploadUsed, sanitizeFileName, signUpload } from '../storage/uploads'
import { ModelResolutionError, resolveRunModels } from '../models/resolve'
import { createSttClient, STT_SAMPLE_RATE } from '../models/stt'
import { ModelServerError } from '../models/types'
import { ulawToPcm16 } from '../voice/g711'
import { resample } from '../lib/resample'
import { AudioImportError, decodeToLineAudio, LINE_RATE, WIDE_RATE, type LineAudio } from './line-audio'
import { definitionMentions, toolMention } from '../definition/recording-references'
import { existingRecordingIds } from '../tools/recordings'
import { agentVersionLabel, liveAgentVersions } from '../db/agent-versions'
import { encodeWav, pcmBytes } from '../lib/wav'
import { within } from '../lib/within'

export const MAX_RECORDING_BYTES = 5 * 1024 * 1024
const UPLOAD_REMOVED = 'the upload was removed, unused a day after its grant: upload the file again'
export const RECORDING_CONTENT_TYPES = [
  'audio/wav',
  'audio/x-wav',
  'audio/wave',
  'audio/vnd.wave',
  'audio/mpeg',
  'audio/mp3',
] as const

type UploadRequest = { filename: string; mime_type?: string; file_size: number }
type CreateRequest = {
  recording_id: string
  transcript?: string
  storage_key: string
  tts_provider?: string | null
  tts_model?: string | null
  tts_voice_id?: string | null
  metadata?: Record<string, unknown> | null
}
type ListQuery = { workflow_id?: number; tts_provider?: string; tts_model?: string; tts_voice_id?: string }

export function recordingView(row: WorkflowRecordingRow) {
  return {
    id: row.id,
    recording_id: row.recordingId,
    workflow_id: null,
    organization_id: row.organizationId,
    transcript: row.transcript,
    storage_key: row.storageKey,
    storage_backend: 'local',
    duration_ms: row.durationMs,
    source_format: row.sourceFormat,
    tts_provider: row.ttsProvider,
    tts_model: row.ttsModel,
    tts_voice_id: row.ttsVoiceId,
    metadata: row.metadata,
    created_by: row.createdBy,
    created_at: row.createdAt,
    is_active: true,
  }
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'

/** A fresh 8-character id no recording of the organization has. */
function freshRecordingId(ctx: AppContext, organizationId: number): string {
  for (;;) {
    const bytes = crypto.getRandomValues(new Uint8Array(8))
    const candidate = Array.from(bytes, (byte) => ID_ALPHABET[byte % ID_ALPHABET.length]).join('')
    if (!findByRecordingId(ctx, organizationId, candidate)) return candidate
  }
}

const findByRecordingId = (ctx: AppContext, organizationId: number, recordingId: string) =>
  ctx.db
    .select()
    .from(workflowRecordings)
    .where(and(eq(workflowRecordings.organizationId, organizationId), eq(workflowRecordings.recordingId, recordingId)))
    .get()

/** One signed upload URL per file, each with a suggested free `recording_id` and the key to create it from. */
export function createUploadUrls(ctx: AppContext, organizationId: number, files: UploadRequest[]) {
  return {
    items: files.map((file) => {
      const fileKey = `workflow-recordings/${organizationId}/${crypto.randomUUID()}/${sanitizeFileName(file.filename)}`
      const grant = signUpload(ctx, organizationId, {
        fileKey,
        fileName: file.filename,
        contentType: file.mime_type ?? 'audio/wav',
        maxBytes: file.file_size,
      })
      return {
        upload_url: grant.upload_url,
        recording_id: freshRecordingId(ctx, organizationId),
        storage_key: fileKey,
        expires_in: grant.expires_in,
      }
    }),
  }
}

/** Problems of one item of a create request, before any decoding: where its file is, whether its name is free. */
function itemProblems(
  ctx: AppContext,
  organizationId: number,
  item: CreateRequest,
  index: number,
  items: CreateRequest[],
): ValidationItem[] {
  const at = (field: string) => ['body', 'recordings', index, field]
  if (
    completedUploadSize(ctx, organizationId, item.storage_key) === null ||
    !item.storage_key.startsWith(`workflow-recordings/${organizationId}/`)
  ) {
    return [
      valueError(
        at('storage_key'),
        'not a completed recording upload of this organization: ask for an upload URL and PUT the file first',
        item.storage_key,
      ),
    ]
  }
  const used = ctx.db
    .select({ id: workflowRecordings.id })
    .from(workflowRecordings)
    .where(eq(workflowRecordings.storageKey, item.storage_key))
    .get()
  if (used || items.findIndex((other) => other.storage_key === item.storage_key) !== index) {
    return [valueError(at('storage_key'), 'this upload is already a recording', item.storage_key)]
  }
  return []
}

function nameConflicts(ctx: AppContext, organizationId: number, items: CreateRequest[]): string[] {
  const ids = items.map((item) => item.recording_id)
  const repeated = ids.filter((id, index) => ids.indexOf(id) !== index)
  const taken = ctx.db
    .select({ recordingId: workflowRecordings.recordingId })
    .from(workflowRecordings)
    .where(and(eq(workflowRecordings.organizationId, organizationId), inArray(workflowRecordings.recordingId, ids)))
    .all()
  return [...new Set([...repeated, ...taken.map((row) => row.recordingId)])]
}

/**
 * Creates recordings from completed uploads, all or none: 409 when a `recording_id` is taken, 422 naming the item
 * whose file is not this organization's upload or is not audio this server can play.
 */
export async function createRecordings(
  ctx: AppContext,
  organizationId: number,
  createdBy: number,
  items: CreateRequest[],
) {
  const conflicts = nameConflicts(ctx, organizationId, items)
  if (conflicts.length > 0) throw conflict(`recording_id already used in this organization: ${conflicts.join(', ')}`)
  const problems = items.flatMap((item, index) => itemProblems(ctx, organizationId, item, index, items))
  if (problems.length > 0) throw invalid(problems)
  const decoded: LineAudio[] = []
  for (const [index, item] of items.entries())
    decoded.push(await decodeUpload(ctx, item.storage_key, ['body', 'recordings', index, 'storage_key']))
  const createdAt = isoNow(ctx.clock)
  const rows = items.map((item, index) => ({
    organizationId,
    recordingId: item.recording_id,
    transcript: item.transcript ?? '',
    storageKey: item.storage_key,
    lineAudioKey: lineAudioKey(item.storage_key),
    durationMs: decoded[index].durationMs,
    sourceFormat: decoded[index].source,
    ttsProvider: item.tts_provider ?? null,
    ttsModel: item.tts_model ?? null,
    ttsVoiceId: item.tts_voice_id ?? null,
    metadata: item.metadata ?? {},
    createdBy,
    createdAt,
  }))
  for (const [index, row] of rows.entries()) {
    await ctx.objects.put(row.lineAudioKey, decoded[index].ulaw)
    await ctx.objects.put(wideAudioKey(row.lineAudioKey), pcmBytes(decoded[index].pcm16k))
  }
  // Names checked again inside the write: another request may have taken one while this one decoded.
  const created = transaction(ctx, () => {
    const raced = nameConflicts(ctx, organizationId, items)
    if (raced.length > 0) throw conflict(`recording_id already used in this organization: ${raced.join(', ')}`)
    const gone = items.flatMap((item, index) =>
      markUploadUsed(ctx, organizationId, item.storage_key)
        ? []
        : [valueError(['body', 'recordings', index, 'storage_key'], UPLOAD_REMOVED, item.storage_key)],
    )
    if (gone.length > 0) throw invalid(gone)
    return ctx.db.insert(workflowRecordings).values(rows).returning().all()
  })
  ctx.log.info({ organizationId, recordings: created.map((row) => row.recordingId) }, 'recordings created')
  return { recordings: created.map(recordingView) }
}

const lineAudioKey = (storageKey: string) => `${storageKey}.line-8k.ulaw`
/** The 16 kHz copy is kept beside the line audio, under a name derived from it (no column of its own). */
const wideAudioKey = (lineKey: string) => lineKey.replace(/\.line-8k\.ulaw$/, '.wide-16k.pcm')

async function decodeUpload(ctx: AppContext, storageKey: string, loc: (string | number)[]): Promise<LineAudio> {
  const object = await ctx.objects.get(storageKey)
  const bytes = object ? await object.bytes() : new Uint8Array(0)
  try {
    return await decodeToLineAudio(bytes)
  } catch (error) {
    if (error instanceof AudioImportError) throw invalid([valueError(loc, error.message, storageKey)])
    throw error
  }
}

/**
 * What an uploaded recording says, by the organization's speech to text (its default model configuration's stt):
 * the reference's `/transcribe`, but of a file uploaded through a signed URL (so size-capped) instead of a second,
 * unbounded multipart upload. The transcript is returned, not stored: send it with the create.
 */
export async function transcribeUpload(
  ctx: AppContext,
  organizationId: number,
  body: { storage_key: string; language?: string },
) {
  const loc = ['body', 'storage_key']
  if (
    !body.storage_key.startsWith(`workflow-recordings/${organizationId}/`) ||
    completedUploadSize(ctx, organizationId, body.storage_key) === null
  ) {
    throw invalid([valueError(loc, 'not a completed recording upload of this organization', body.storage_key)])
  }
  let stt
  try {
    stt = resolveRunModels(ctx, organizationId, { overrides: null, agentConfigurationUuid: null }).stt
  } catch (error) {
    if (error instanceof ModelResolutionError) throw refused(`Speech to text is not available: ${error.message}`)
    throw error
  }
  const model = typeof stt?.settings.model === 'string' ? stt.settings.model : ''
  if (!stt?.connection || model === '')
    throw refused('No speech to text is configured: add an stt section to the default model configuration')
  const audio = await decodeUpload(ctx, body.storage_key, loc)
  const language = body.language && body.language !== 'multi' ? body.language : undefined
  try {
    const pcm16k = resample(audio.pcm16k, WIDE_RATE, STT_SAMPLE_RATE)
    const transcript = await createSttClient(stt.connection, { model, language }).transcribe(pcm16k)
    return { transcript }
  } catch (error) {
    if (error instanceof ModelServerError) throw upstreamFailed(`Transcription failed: ${error.message}`, error)
    throw error
  }
}

export function listRecordings(ctx: AppContext, organizationId: number, query: ListQuery) {
  if (query.workflow_id !== undefined) return { recordings: [], total: 0 }
  const filters = [eq(workflowRecordings.organizationId, organizationId)]
  if (query.tts_provider !== undefined) filters.push(eq(workflowRecordings.ttsProvider, query.tts_provider))
  if (query.tts_model !== undefined) filters.push(eq(workflowRecordings.ttsModel, query.tts_model))
  if (query.tts_voice_id !== undefined) filters.push(eq(workflowRecordings.ttsVoiceId, query.tts_voice_id))
  const rows = ctx.db
    .select()
    .from(workflowRecordings)
    .where(and(...filters))
    .orderBy(desc(workflowRecordings.id))
    .all()
  return { recordings: rows.map(recordingView), total: rows.length }
}

/** Where the organization's agents (draft and published versions) and active tools name `recordingId`. */
export function recordingUsers(ctx: AppContext, organizationId: number, recordingId: string): string[] {
  const agentUsers = liveAgentVersions(ctx, organizationId)
    .filter((version) =>
      definitionMentions(version.json as AgentDefinition).some((mention) => mention.recordingId === recordingId),
    )
    .map(agentVersionLabel)
  const toolUsers = ctx.db
    .select()
    .from(tools)
    .where(and(eq(tools.organizationId, organizationId), eq(tools.status, 'active')))
    .all()
    .filter((tool) => toolMention(tool.definition)?.recordingId === recordingId)
    .map((tool) => `tool '${tool.name}' (${tool.toolUuid})`)
  return [...agentUsers, ...toolUsers]
}

const inUse = (recordingId: string, users: string[], action: string) =>
  conflict(
    `Recording '${recordingId}' cannot be ${action} while it is named by ${users.join('; ')}: change those first`,
  )

/**
 * Renames by primary key (as the reference does; 409 when the name is taken or something names the recording), and
 * sets a new transcript when one is given.
 */
export function updateRecording(
  ctx: AppContext,
  organizationId: number,
  id: number,
  change: { recording_id: string; transcript?: string },
) {
  const row = ctx.db
    .select()
    .from(workflowRecordings)
    .where(and(eq(workflowRecordings.id, id), eq(workflowRecordings.organizationId, organizationId)))
    .get()
  if (!row) throw notFound(`Recording with id ${id} not found`)
  const newRecordingId = change.recording_id
  const renamed = row.recordingId !== newRecordingId
  if (renamed) {
    const taken = ctx.db
      .select({ id: workflowRecordings.id })
      .from(workflowRecordings)
      .where(
        and(
          eq(workflowRecordings.organizationId, organizationId),
          eq(workflowRecordings.recordingId, newRecordingId),
          ne(workflowRecordings.id, id),
        ),
      )
      .get()
    if (taken) throw conflict(`recording_id '${newRecordingId}' is already used in this organization`)
    const users = recordingUsers(ctx, organizationId, row.recordingId)
    if (users.length > 0) throw inUse(row.recordingId, users, 'renamed')
  }
  // A new transcript breaks no reference (agents name the recording_id): allowed while the recording is in use.
  const transcript = change.transcript ?? row.transcript
  if (!renamed && transcript === row.transcript) return recordingView(row)
  const updated = ctx.db
    .update(workflowRecordings)
    .set({ recordingId: newRecordingId, transcript })
    .where(eq(workflowRecordings.id, id))
    .returning()
    .get()
  return recordingView(updated)
}

/** Deletes a recording and its audio; 409 while an agent or tool names it. */
export async function deleteRecording(ctx: AppContext, organizationId: number, recordingId: string) {
  const row = findByRecordingId(ctx, organizationId, recordingId)
  if (!row) throw notFound(`Recording '${recordingId}' not found`)
  const users = recordingUsers(ctx, organizationId, recordingId)
  if (users.length > 0) throw inUse(recordingId, users, 'deleted')
  ctx.db.delete(workflowRecordings).where(eq(workflowRecordings.id, row.id)).run()
  await ctx.objects.delete(row.lineAudioKey)
  await ctx.objects.delete(wideAudioKey(row.lineAudioKey))
  await ctx.objects.delete(row.storageKey)
  return { success: true, message: `Recording '${recordingId}' deleted` }
}

/** One error per place a definition names a recording the organization does not have (checked on save and publish). */
export function recordingReferenceErrors(
  ctx: AppContext,
  organizationId: number,
  definition: AgentDefinition,
): DefinitionError[] {
  const mentions = definitionMentions(definition)
  const known = existingRecordingIds(
    ctx,
    organizationId,
    mentions.map((mention) => mention.recordingId),
  )
  return mentions
    .filter((mention) => !known.has(mention.recordingId))
    .map((mention) => ({
      kind: mention.kind,
      id: mention.id,
      field: mention.field,
      message: `Recording '${mention.recordingId}' is not a recording of this organization`,
    }))
}

/** A recording as a call plays it: `ulaw` at 8 kHz for ARI and carrier streams, `pcm16k` for the browser web call. */
export type PlayableRecording = { transcript: string; ulaw: Uint8Array; pcm16k: Int16Array }

/** What a call plays for a recording; null when the organization has no such recording. */
export async function loadLineAudio(
  ctx: AppContext,
  organizationId: number,
  recordingId: string,
): Promise<PlayableRecording | null> {
  const row = findByRecordingId(ctx, organizationId, recordingId)
  if (!row) return null
  const ulaw = await readObject(ctx, row.lineAudioKey)
  if (!ulaw) return null
  const pcm16k = (await wideAudio(ctx, row.lineAudioKey, async () => ulaw))!
  return { transcript: row.transcript, ulaw, pcm16k }
}

const readObject = async (ctx: AppContext, key: string) => (await ctx.objects.get(key))?.bytes() ?? null

/**
 * The 16 kHz copy stored beside the line audio. Recordings created before that copy existed: their line audio (read
 * only then) upsampled.
 */
async function wideAudio(
  ctx: AppContext,
  lineAudioKey: string,
  lineAudio: () => Promise<Uint8Array | null>,
): Promise<Int16Array | null> {
  const wide = await readObject(ctx, wideAudioKey(lineAudioKey))
  if (wide) return new Int16Array(wide.buffer, wide.byteOffset, wide.byteLength >> 1)
  const ulaw = await lineAudio()
  return ulaw && resample(ulawToPcm16(ulaw), LINE_RATE, WIDE_RATE)
}

/**
 * A recording's audio as the web call plays it (16 kHz mono 16-bit PCM) in a WAV, for a browser's player; 404 when
 * the organization has no such recording.
 */
export async function recordingAudioWav(ctx: AppContext, organizationId: number, recordingId: string) {
  const row = findByRecordingId(ctx, organizationId, recordingId)
  // the player needs the 16 kHz copy alone: the line audio is read only for a recording without one
  const pcm16k = row && (await wideAudio(ctx, row.lineAudioKey, () => readObject(ctx, row.lineAudioKey)))
  if (!pcm16k) throw notFound(`Recording '${recordingId}' not found`)
  const wav = encodeWav(pcm16k, WIDE_RATE)
  return new Response(wav, {
    headers: {
      'content-type': 'audio/wav',
      'content-length': String(wav.byteLength),
      'content-disposition': `inline; filename="recording-${recordingId}.wav"`,
      'cache-control': 'private, no-store',
    },
  })
}

/**
 * How long a run's start waits for its recordings: a caller is on the line meanwhile. One not read by then (an object
 * store that is slow or silent) is left out with a warning; the conversation speaks instead, as for a recording it
 * does not have.
 */
const RECORDINGS_LOAD_MS = 3_000

/** The organization's recordings among `ids`, loaded before a run starts so that playing one needs no I/O. */
export async function loadPlayableRecordings(
  ctx: AppContext,
  organizationId: number,
  ids: string[],
): Promise<Map<string, PlayableRecording>> {
  const loaded = new Map<string, PlayableRecording>()
  const leftOut = (id: string, reason: unknown) => {
    ctx.log.warn({ err: reason, recordingId: id }, 'recording not loaded for the run: left out')
    return null
  }
  await Promise.all(
    ids.map(async (id) => {
      const reading = loadLineAudio(ctx, organizationId, id).catch((error) => leftOut(id, error))
      const recording = await within(reading, RECORDINGS_LOAD_MS, () => leftOut(id, 'not read in time'))
      if (recording) loaded.set(id, recording)
    }),
  )
  return loaded
}
