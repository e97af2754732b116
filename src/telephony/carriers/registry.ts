import type { AppContext } from '../context'
import { createCarrierProvider, type CarrierDriver, type CarrierName } from './carrier'
import { cloudonixDriver } from './providers/cloudonix-adapter'
import { exotelDriver } from './providers/exotel-adapter'
import { plivoDriver, vobizDriver } from './providers/plivo-adapter'
import { telnyxDriver } from './providers/telnyx-adapter'
import { twilioDriver } from './providers/twilio-adapter'
import { vonageDriver } from './providers/vonage-adapter'
import { whatsappDriver } from './providers/whatsapp-adapter'

/** Every carrier adapter, by provider name (ARI has its own, src/telephony/ari/). */
export const CARRIER_DRIVERS: Record<CarrierName, CarrierDriver> = {
  cloudonix: cloudonixDriver,
  exotel: exotelDriver,
  plivo: plivoDriver,
  telnyx: telnyxDriver,
  twilio: twilioDriver,
  vobiz: vobizDriver,
  vonage: vonageDriver,
  whatsapp: whatsappDriver,
}

export const carrierDriver = (provider: string): CarrierDriver | null =>
  (Object.hasOwn(CARRIER_DRIVERS, provider) ? CARRIER_DRIVERS[provider as CarrierName] : null)

/** Makes every carrier a TelephonyProvider of the context: runs on their configurations dial through them. */
export function registerCarriers(ctx: AppContext): void {
  for (const driver of Object.values(CARRIER_DRIVERS)) ctx.telephony.register(driver.provider, createCarrierProvider(ctx, driver))
}
