import type { AppContext } from '../../context'
import { createCarrierProvider, type CarrierDriver, type CarrierName } from './carrier'
import { cloudonixDriver } from './cloudonix'
import { exotelDriver } from './exotel'
import { plivoDriver, vobizDriver } from './plivo'
import { telnyxDriver } from './telnyx'
import { twilioDriver } from './twilio'
import { vonageDriver } from './vonage'
import { whatsappDriver } from './whatsapp'

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
