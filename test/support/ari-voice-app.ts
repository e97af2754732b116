import { createVoiceConversations, type VoiceConversationOptions } from '../../src/calls/voice'
import { contactAttempts } from '../../src/campaigns/attempts'
import { systemClock } from '../../src/lib/clock'
import { startAriManager } from '../../src/telephony/ari/manager'
import { createTestApp, type TestApp } from './app'
import { startFakeAri, type FakeAri, type FakeAriOptions } from './fake-ari'
import { startFakeModels, type FakeModels } from './fake-models'
import { createConfiguration } from './telephony'
import { configureFakeVoiceModels } from './voice-models'
import { waitFor } from './wait'

export type AriVoiceApp = {
  t: TestApp
  fake: FakeAri
  models: FakeModels
  configurationId: number
  stop(): Promise<void>
}

/**
 * A test app on real time (idle timers, turn times) whose voice calls go through the fake Asterisk, with the fake model
 * servers as the organization's models and an ARI configuration on the fake (`ari` over its connection fields) as the
 * default outbound one, connected; inbound calls are routed (the context's router, calls/inbound.ts). `conversation`:
 * options of the voice conversations (shorter model timeouts, pipeline timings); `fakeAri`: the fake Asterisk's
 * options (e.g. a default scenario that answers any extension, for calls placed at once on extensions of their own);
 * `flags`: the app's (e.g. its database URL).
 */
export async function startAriVoiceApp(
  ari: Record<string, unknown>,
  conversation: Partial<VoiceConversationOptions> = {},
  fakeAri: FakeAriOptions = {},
  flags: NonNullable<Parameters<typeof createTestApp>[0]>['flags'] = {},
): Promise<AriVoiceApp> {
  const t = createTestApp({ clock: systemClock, flags })
  const models = startFakeModels()
  const fake = await startFakeAri(fakeAri)
  await configureFakeVoiceModels(t, models)
  const conversations = createVoiceConversations(t.ctx, {
    attempts: contactAttempts,
    ...conversation,
    pipeline: { tickIntervalMs: 20, mediaLossGraceMs: 100, ...conversation.pipeline },
  })
  t.ctx.telephony.onAnswered((call) => conversations.onAnswered(call))
  startAriManager(t.ctx, { events: { backoff: { baseMs: 2, capMs: 10 } } })
  const config = await createConfiguration(
    t,
    'pbx',
    { provider: 'ari', ari_endpoint: fake.url, app_name: 'ariuser', app_password: 'aripass', ...ari },
    { isDefaultOutbound: true },
  )
  await waitFor('ARI connected', () => t.ctx.ariConnected(config.id))
  return {
    t,
    fake,
    models,
    configurationId: config.id,
    async stop() {
      await t.ctx.ari!.stop()
      await fake.close()
      models.stop()
      t.close()
    },
  }
}
