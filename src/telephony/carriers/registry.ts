import type { AppContext } from '../../context'
import { createCarrierProvider, type Carrier, type CarrierName } from './carrier'
import { cloudonixCarrier } from './cloudonix'
import { exotelCarrier } from './exotel'
import { plivoCarrier, vobizCarrier } from './plivo'
import { telnyxCarrier } from './telnyx'
import { twilioCarrier } from './twilio'
import { vonageCarrier } from './vonage'
import { whatsappCarrier } from './whatsapp'

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
