import cron from 'node-cron'
import type { AppContext } from './context'
import { cronLogger } from './log'
import { closeCallsInterruptedByRestart, closeCallsOfDeadPeers, closeVanishedCalls } from './calls/recovery'
import { createVoiceConversations, removeRecordingSpills } from './calls/voice'
import { contactAttempts } from './campaigns/attempts'
import { discardImportingCampaigns } from './campaigns/lifecycle'
import { createCampaignScheduler } from './campaigns/scheduler'
import { startCheckpointer } from './db/checkpointer'
import { backendOf, databasePath } from './db/open'
import { startInstanceHeartbeat } from './instances/registry'
import { startAriManager } from './telephony/ari/manager'
import { closeSessionsInterruptedByRestart } from './runs/session-recovery'
import { startTextChatSweeper } from './runs/text-chat'
import { createWebhookDispatcher, releaseHeldDeliveries } from './runs/webhook-outbox'
import { startKnowledgeProcessor } from './knowledge/processing'
import { preloadVectors } from './knowledge/search'
import { removeUnusedUploads } from './storage/uploads'
import { removeDocumentsNeverUploaded } from './knowledge/documents'
import { everyPass } from './lib/periodic'
import { failureStreak } from './lib/failure-streak'

/** The watchdog looks for calls that vanished every minute; a call is checked once open this long past ringing. */
const WATCHDOG_SCHEDULE = '* * * * *'
const WATCHDOG_GRACE_MS = 300_000

export type BackgroundServices = { stop(): Promise<void> }

/** Campaigns whose create request never finished: the instance importing them died while streaming their CSV. */
function removeUnfinishedImports(ctx: AppContext): void {
  const removed = discardImportingCampaigns(ctx)
  if (removed > 0) ctx.log.warn({ campaigns: removed }, 'removed campaigns whose contacts import was interrupted')
}

/**
 * Uploads nothing took (no campaign, document or recording) and the documents whose file never came, removed a day
 * after their grant; once an hour, on every instance (each removal is one conditional statement).
 */
export async function removeWhatNothingTook(ctx: AppContext): Promise<void> {
  await removeUnusedUploads(ctx)
  const documents = removeDocumentsNeverUploaded(ctx)
  if (documents > 0) ctx.log.info({ documents }, 'removed knowledge-base documents whose file never came')
}

/** Runs removeWhatNothingTook every `everyMs` (an hour), its failures logged once per streak. */
export function startUnusedUploadSweeper(ctx: AppContext, everyMs = 3_600_000): { stop(): Promise<void> } {
  const failures = failureStreak(ctx.log, {
    failed: 'unused uploads could not be removed',
    recovered: 'unused uploads are removed again',
  })
  return everyPass(everyMs, () => removeWhatNothingTook(ctx).then(() => failures.succeeded(), failures.failed))
}

/**
 * What a live instance does after each heartbeat: close the calls and conversations of instances that died, remove
 * their cut-off imports, and send the webhooks their runs' QA reviews held.
 */
async function recoverDeadPeers(ctx: AppContext): Promise<void> {
  removeUnfinishedImports(ctx)
  await closeCallsOfDeadPeers(ctx, contactAttempts)
  await closeSessionsInterruptedByRestart(ctx)
  releaseHeldDeliveries(ctx)
}

/**
 * Everything that runs beside the HTTP API, in start-up order: register this instance among those sharing the
 * database, clean up what a crash left half done, connect to the PBXs (those whose lease this instance takes), close
 * calls nobody can follow any more, then dial. `stop` reverses it.
 */
export async function startBackgroundServices(ctx: AppContext): Promise<BackgroundServices> {
  const instance = startInstanceHeartbeat(ctx, () => recoverDeadPeers(ctx))
  removeUnfinishedImports(ctx)
  // PostgreSQL checkpoints by itself: only SQLite's WAL needs the worker.
  const checkpointer =
    backendOf(ctx.sqlite) === 'sqlite' ? await startCheckpointer(ctx.sqlite, databasePath(ctx.config.dataDir)) : null
  removeRecordingSpills(ctx.config.dataDir)
  const conversations = createVoiceConversations(ctx, { attempts: contactAttempts })
  // Every transport's answered calls (ARI media legs, carrier media streams) get this conversation.
  const stopConversations = ctx.telephony.onAnswered((call) => conversations.onAnswered(call))
  const ari = startAriManager(ctx)
  await closeCallsInterruptedByRestart(ctx, contactAttempts)
  await closeSessionsInterruptedByRestart(ctx)
  // No QA review of a dead instance's run is still running: deliveries held for one go out now.
  releaseHeldDeliveries(ctx)
  const webhooks = createWebhookDispatcher(ctx)
  webhooks.start()
  const scheduler = createCampaignScheduler(ctx)
  const stopWaking = ctx.telephony.onReport(() => scheduler.wake())
  scheduler.start()
  const textChats = startTextChatSweeper(ctx)
  const unusedUploads = startUnusedUploadSweeper(ctx)
  // Documents queued or interrupted before a restart are taken up here (interrupted ones once their lease runs out).
  const knowledge = startKnowledgeProcessor(ctx, { leaseMs: ctx.config.knowledgeLeaseSeconds * 1000 })
  // Organizations' vectors into memory, sliced, so no call's first retrieval waits for them: begun a turn later, once
  // the server listens (main.ts starts it right after this returns).
  let stopping = false
  const preload = new Promise((resolve) => setImmediate(resolve))
    .then(() => preloadVectors(ctx, () => stopping))
    .catch((error) => ctx.log.warn({ err: error }, 'knowledge-base vectors not preloaded'))
  // Only calls the provider no longer has are closed, so long conversations are safe from the watchdog.
  const maxOpenMs = ctx.config.ringTimeoutSeconds * 1000 + WATCHDOG_GRACE_MS
  // noOverlap: a slow provider lookup never lets two rounds run at once.
  const watchdog = cron.schedule(
    WATCHDOG_SCHEDULE,
    async () => {
      await closeVanishedCalls(ctx, maxOpenMs, contactAttempts).catch((error) =>
        ctx.log.error({ err: error }, 'watchdog failed'),
      )
    },
    { name: 'call-watchdog', noOverlap: true, logger: cronLogger(ctx.log) },
  )
  return {
    async stop() {
      stopping = true
      await preload
      await watchdog.destroy()
      await knowledge.stop()
      await textChats.stop()
      await unusedUploads.stop()
      await webhooks.stop()
      stopWaking()
      stopConversations()
      await scheduler.stop()
      await ari.stop()
      await checkpointer?.stop()
      await instance.stop()
    },
  }
}
