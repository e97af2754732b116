import type { AppContext } from '../context'
import { createCarrierProvider, type CarrierDriver, type CarrierName } from './carrier'
import { plivoDriver, vobizDriver } from './providers/plivo-adapter'
import { telnyxDriver } from './providers/telnyx-adapter'
import { twilioDriver } from './providers/twilio-adapter'
import { vonageDriver } from './providers/vonage-adapter'

/** Every carrier adapter, by provider name (ARI has its own, src/telephony/ari/). */
export const CARRIER_DRIVERS: Partial<Record<CarrierName, CarrierDriver>> = {
  plivo: plivoDriver,
  telnyx: telnyxDriver,
  twilio: twilioDriver,
  vobiz: vobizDriver,
  vonage: vonageDriver,
}

export const carrierDriver = (provider: string): CarrierDriver | null =>
  (CARRIER_DRIVERS as Record<string, CarrierDriver | undefined>)[provider] ?? null

/** Makes every carrier a TelephonyProvider of the context: runs on their configurations dial through them. */
export function registerCarriers(ctx: AppContext): void {
  for (const driver of Object.values(CARRIER_DRIVERS)) ctx.telephony.register(driver.provider, createCarrierProvider(ctx, driver))
}
