import type { AppContext } from '../../context'
import type { TelephonyProvider } from '../provider'
import { DialError } from '../provider'
import type { ProviderInfo } from '../provider-info'
import { asDialError, callLinks, recordProviderCallId, runByCallId, type Carrier, type CarrierName } from './carrier'
import { cloudonix, cloudonixCarrier } from './cloudonix'
import { exotel, exotelCarrier } from './exotel'
import { plivo, plivoCarrier } from './plivo'
import { vobiz, vobizCarrier } from './vobiz'
import { telnyx, telnyxCarrier } from './telnyx'
import { twilio, twilioCarrier } from './twilio'
import { vonage, vonageCarrier } from './vonage'
import { whatsapp, whatsappCarrier } from './whatsapp'

/** Every carrier's metadata (schema, form fields, checklist), by provider name. */
export const CARRIER_INFO: Record<CarrierName, ProviderInfo> = {
  cloudonix,
  exotel,
  plivo,
  telnyx,
  twilio,
  vobiz,
  vonage,
  whatsapp,
}

export const displayName = (provider: CarrierName) => CARRIER_INFO[provider].displayName

/** Every carrier, by provider name (ARI has its own, src/telephony/ari/). */
export const CARRIERS: Record<CarrierName, Carrier> = {
  cloudonix: cloudonixCarrier,
  exotel: exotelCarrier,
  plivo: plivoCarrier,
  telnyx: telnyxCarrier,
  twilio: twilioCarrier,
  vobiz: vobizCarrier,
  vonage: vonageCarrier,
  whatsapp: whatsappCarrier,
}

export const carrierOf = (provider: string): Carrier | null =>
  Object.hasOwn(CARRIERS, provider) ? CARRIERS[provider as CarrierName] : null

/** Makes every carrier a TelephonyProvider of the context: runs on their configurations dial through them. */
export function registerCarriers(ctx: AppContext): void {
  for (const carrier of Object.values(CARRIERS))
    ctx.telephony.register(carrier.provider, createCarrierProvider(ctx, carrier))
}

/** The TelephonyProvider of a carrier: dial, hang up and look up calls through its Carrier. */
export function createCarrierProvider(ctx: AppContext, carrier: Carrier): TelephonyProvider {
  /** The run's carrier call id and the credentials to reach it; null when the call was never placed. */
  function placedCall(configurationId: number, callId: string) {
    const run = runByCallId(ctx, callId)
    const configuration = ctx.telephony.configurations.opened(configurationId)
    if (!run?.providerCallId || !configuration) return null
    return { providerCallId: run.providerCallId, credentials: configuration.credentials }
  }

  return {
    async dial(request) {
      if (!request.callerId) {
        throw new DialError(
          `${displayName(carrier.provider)} needs a caller id: add an active phone number to the telephony configuration`,
        )
      }
      const links = callLinks(ctx, request)
      const providerCallId = await carrier.dial(ctx, request, links).catch(asDialError)
      recordProviderCallId(ctx, request.runId, providerCallId)
      ctx.log.info({ provider: carrier.provider, runId: request.runId, providerCallId }, 'carrier call placed')
    },
    async hangup(configurationId, callId) {
      const call = placedCall(configurationId, callId)
      if (call) await carrier.hangup(ctx, call.credentials, call.providerCallId).catch(asDialError)
    },
    async callState(configurationId, callId) {
      const call = placedCall(configurationId, callId)
      if (!call) return 'unknown'
      try {
        return await carrier.callState(ctx, call.credentials, call.providerCallId)
      } catch (error) {
        ctx.log.warn({ provider: carrier.provider, callId, err: error }, 'carrier call state lookup failed')
        return 'unknown'
      }
    },
  }
}
