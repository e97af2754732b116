/** Phone numbers, SIP addresses and ARI dial strings: normalisation and validation, no I/O. */

export type AddressType = 'pstn' | 'sip_uri' | 'sip_extension'

export type NormalizedAddress = { address_normalized: string; address_type: AddressType }

/** An address that cannot be normalised at all (empty, or a SIP URI without a usable host/port). */
export class AddressError extends Error {}

type CountryDialing = {
  dialCode: string
  /** Digits of a national number without its trunk prefix: used to tell "already international" from "national". */
  nationalDigits: readonly [min: number, max: number]
  /** Italy keeps the leading 0 of landline numbers after the country code. */
  keepsLeadingZero?: true
}

const COUNTRIES: Readonly<Record<string, CountryDialing>> = {
  US: { dialCode: '1', nationalDigits: [10, 10] },
  CA: { dialCode: '1', nationalDigits: [10, 10] },
  GB: { dialCode: '44', nationalDigits: [9, 10] },
  IE: { dialCode: '353', nationalDigits: [7, 9] },
  IN: { dialCode: '91', nationalDigits: [10, 10] },
  PK: { dialCode: '92', nationalDigits: [9, 10] },
  DE: { dialCode: '49', nationalDigits: [6, 13] },
  FR: { dialCode: '33', nationalDigits: [9, 9] },
  ES: { dialCode: '34', nationalDigits: [9, 9] },
  IT: { dialCode: '39', nationalDigits: [6, 11], keepsLeadingZero: true },
  PT: { dialCode: '351', nationalDigits: [9, 9] },
  NL: { dialCode: '31', nationalDigits: [9, 9] },
  BE: { dialCode: '32', nationalDigits: [8, 9] },
  CH: { dialCode: '41', nationalDigits: [9, 9] },
  PL: { dialCode: '48', nationalDigits: [9, 9] },
  AU: { dialCode: '61', nationalDigits: [9, 9] },
  NZ: { dialCode: '64', nationalDigits: [8, 10] },
  SG: { dialCode: '65', nationalDigits: [8, 8] },
  MY: { dialCode: '60', nationalDigits: [9, 10] },
  PH: { dialCode: '63', nationalDigits: [8, 10] },
  JP: { dialCode: '81', nationalDigits: [9, 10] },
  CN: { dialCode: '86', nationalDigits: [9, 11] },
  HK: { dialCode: '852', nationalDigits: [8, 8] },
  AE: { dialCode: '971', nationalDigits: [8, 9] },
  SA: { dialCode: '966', nationalDigits: [9, 9] },
  IL: { dialCode: '972', nationalDigits: [8, 9] },
  TR: { dialCode: '90', nationalDigits: [10, 10] },
  EG: { dialCode: '20', nationalDigits: [9, 10] },
  NG: { dialCode: '234', nationalDigits: [8, 10] },
  KE: { dialCode: '254', nationalDigits: [9, 9] },
  ZA: { dialCode: '27', nationalDigits: [9, 9] },
  BR: { dialCode: '55', nationalDigits: [10, 11] },
  MX: { dialCode: '52', nationalDigits: [10, 10] },
  AR: { dialCode: '54', nationalDigits: [10, 11] },
  CO: { dialCode: '57', nationalDigits: [8, 10] },
  CL: { dialCode: '56', nationalDigits: [9, 9] },
}

/** The international dial code (digits, no '+') of an ISO 3166-1 alpha-2 country, or null when not in our table. */
export function dialCodeFor(countryCode: string): string | null {
  return COUNTRIES[countryCode.toUpperCase()]?.dialCode ?? null
}

const E164 = /^\+[1-9]\d{7,14}$/

export const isE164 = (value: string): boolean => E164.test(value)

const PSTN_DIGITS = /^\d{8,15}$/

/**
 * Canonical form of a phone-number record's address, used for uniqueness and inbound matching.
 * `countryCode` (ISO-2) is a hint for bare national numbers; an unknown code is ignored here (the caller rejects it).
 * Digit strings that cannot become a plausible E.164 number (e.g. `0801234567` without a country) stay extensions,
 * which keeps PBX dial patterns intact.
 */
export function normalizeAddress(raw: string, countryCode?: string | null): NormalizedAddress {
  const value = raw.trim()
  if (value === '') throw new AddressError('Address is empty')
  if (/^sips?:/i.test(value)) return { address_normalized: normalizeSipUri(value), address_type: 'sip_uri' }

  const compact = value.replace(/[\s\-()]/g, '')
  const hasPlus = compact.startsWith('+')
  const unsigned = hasPlus ? compact.slice(1) : compact
  const country = countryCode ? COUNTRIES[countryCode.toUpperCase()] : undefined
  const digits = /^\d+$/.test(unsigned) ? pstnDigits(unsigned, hasPlus, country) : null
  if (digits) return { address_normalized: `+${digits}`, address_type: 'pstn' }
  return { address_normalized: unsigned.toLowerCase(), address_type: 'sip_extension' }
}

/** The E.164 digits (no '+') of a digit string, or null when it is not a plausible PSTN number. */
function pstnDigits(digits: string, hasPlus: boolean, country: CountryDialing | undefined): string | null {
  if (!PSTN_DIGITS.test(digits)) return null
  if (hasPlus) return plausibleE164(digits)
  if (digits.startsWith('00')) return plausibleE164(digits.slice(2)) // international access prefix
  if (country) {
    const national = country.keepsLeadingZero ? digits : digits.replace(/^0+/, '')
    const withCode = looksInternational(national, country) ? national : country.dialCode + national
    const hinted = plausibleE164(withCode)
    if (hinted) return hinted
  }
  return plausibleE164(digits)
}

const plausibleE164 = (digits: string): string | null => (E164.test(`+${digits}`) ? digits : null)

const withinNationalLength = (length: number, country: CountryDialing) =>
  length >= country.nationalDigits[0] && length <= country.nationalDigits[1]

/** Digits that start with the country code and only make sense as an international number (e.g. IN `919876543210`). */
function looksInternational(digits: string, country: CountryDialing): boolean {
  return (
    digits.startsWith(country.dialCode) &&
    withinNationalLength(digits.length - country.dialCode.length, country) &&
    !withinNationalLength(digits.length, country)
  )
}

const DEFAULT_SIP_PORT: Readonly<Record<string, string>> = { sip: '5060', sips: '5061' }

/** Lowercases scheme, host and parameters, keeps the user part's case, drops the scheme's default port. */
function normalizeSipUri(uri: string): string {
  const colon = uri.indexOf(':')
  const scheme = uri.slice(0, colon).toLowerCase()
  let rest = uri.slice(colon + 1)
  let headers = ''
  const question = rest.indexOf('?')
  if (question >= 0) {
    headers = rest.slice(question)
    rest = rest.slice(0, question)
  }
  const at = rest.lastIndexOf('@')
  const userinfo = at >= 0 ? rest.slice(0, at + 1) : ''
  const hostAndParams = rest.slice(at + 1)
  const semicolon = hostAndParams.indexOf(';')
  const hostport = semicolon >= 0 ? hostAndParams.slice(0, semicolon) : hostAndParams
  const params = semicolon >= 0 ? hostAndParams.slice(semicolon).toLowerCase() : ''

  const { host, port } = splitHostPort(hostport)
  if (host === '') throw new AddressError(`SIP URI has no host: ${uri}`)
  if (port !== null && !/^\d{1,5}$/.test(port)) throw new AddressError(`SIP URI has an invalid port: ${uri}`)
  const keptPort = port === null || port === DEFAULT_SIP_PORT[scheme] ? '' : `:${port}`
  return `${scheme}:${userinfo}${host.toLowerCase()}${keptPort}${params}${headers}`
}

function splitHostPort(hostport: string): { host: string; port: string | null } {
  if (hostport.startsWith('[')) {
    const close = hostport.indexOf(']')
    if (close < 0) return { host: '', port: null }
    const after = hostport.slice(close + 1)
    return {
      host: hostport.slice(0, close + 1),
      port: after.startsWith(':') ? after.slice(1) : after === '' ? null : after,
    }
  }
  const colon = hostport.lastIndexOf(':')
  return colon >= 0
    ? { host: hostport.slice(0, colon), port: hostport.slice(colon + 1) }
    : { host: hostport, port: null }
}

export const ARI_PROVIDER = 'ari'
export const MAX_DESTINATION_LENGTH = 128
export const DEFAULT_DIAL_STRING_TEMPLATE = 'PJSIP/{number}'
const NUMBER_PLACEHOLDER = '{number}'

/** Channel technologies a destination may carry to be dialled as written. Case-sensitive, as written in Asterisk docs. */
const CHANNEL_TECHNOLOGY = /^(?:PJSIP|SIP|IAX2|Local|DAHDI)\//
/**
 * Everything after the technology is limited to characters that cannot split or extend an Asterisk dial string:
 * no `,` or `&` (Dial separators), `|`, `^`, `$`, braces, quotes, parentheses, whitespace or control characters.
 */
const DIAL_STRING = /^(?:PJSIP|SIP|IAX2|Local|DAHDI)\/[A-Za-z0-9._+*#@:~-][A-Za-z0-9._+*#@:/~-]*$/
const EXTENSION = /^[0-9*#]+$/
const SIP_URI = /^sips?:[A-Za-z0-9._~+*#-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::(\d{1,5}))?$/i
const SIP_SCHEME = /^sips?:/i
const SEPARATORS = /[\s,&]/

/** A `sip:`/`sips:` URI with a user part and a port, if any, that can be one. */
export function isSipUri(value: string): boolean {
  const uri = SIP_URI.exec(value)
  return uri !== null && (uri[1] === undefined || Number(uri[1]) <= 65535)
}

/**
 * What an ARI configuration lets a destination be. A raw dial string (`Local/s@from-internal`, `PJSIP/…@trunk`) bypasses
 * the configuration's `dial_string_template` and reaches anything the dialplan or a trunk does: only when the
 * configuration says so (`allow_raw_dial_strings`).
 */
export type DestinationRules = { rawDialStrings: boolean }

const NO_RAW_DIAL_STRINGS: DestinationRules = { rawDialStrings: false }

/** Error message (without the field name) when `value` cannot be a call destination for `provider`, else null. */
export function validateDestination(
  value: string,
  provider: string,
  rules: DestinationRules = NO_RAW_DIAL_STRINGS,
): string | null {
  if (value === '') return 'must not be empty'
  if (SEPARATORS.test(value)) return "must not contain spaces, commas or '&'"
  if (value.length > MAX_DESTINATION_LENGTH) return `must be at most ${MAX_DESTINATION_LENGTH} characters`
  if (provider !== ARI_PROVIDER) {
    return isE164(value) ? null : "must be an E.164 number: '+' and 8 to 15 digits, e.g. +14155550100"
  }
  if (isE164(value) || EXTENSION.test(value)) return null
  if (CHANNEL_TECHNOLOGY.test(value)) {
    if (!rules.rawDialStrings) return RAW_DIAL_STRING_REFUSED
    if (DIAL_STRING.test(value)) return null
  }
  if (isSipUri(value)) return rules.rawDialStrings ? null : SIP_URI_REFUSED
  return rules.rawDialStrings
    ? 'must be an E.164 number, an extension (digits, * and #), a SIP URI (sip:user@host[:port]) ' +
        'or a dial string starting with PJSIP/, SIP/, IAX2/, Local/ or DAHDI/'
    : 'must be an E.164 number or an extension (digits, * and #); SIP URIs and raw dial strings need allow_raw_dial_strings on the ARI configuration'
}

// The host of `sip:user@host` becomes the PJSIP endpoint (or SIP server) dialled: the destination would pick the trunk.
const SIP_URI_REFUSED =
  "must be a number or an extension, dialled through the configuration's dial_string_template: a SIP URI names " +
  'the endpoint or trunk to dial, so it needs allow_raw_dial_strings on the ARI configuration'

const RAW_DIAL_STRING_REFUSED =
  "must be a number, an extension or a SIP URI, dialled through the configuration's dial_string_template: " +
  'raw dial strings (PJSIP/, SIP/, IAX2/, Local/, DAHDI/) need allow_raw_dial_strings on the ARI configuration'

/** Error message when an ARI `dial_string_template` cannot produce safe dial strings, else null. */
export function validateDialStringTemplate(template: string): string | null {
  if (!template.includes(NUMBER_PLACEHOLDER)) return `must contain ${NUMBER_PLACEHOLDER}`
  if (!CHANNEL_TECHNOLOGY.test(template)) return 'must start with PJSIP/, SIP/, IAX2/, Local/ or DAHDI/'
  if (!DIAL_STRING.test(substituteNumber(template, '0'))) {
    return `may only contain letters, digits and . _ + * # @ : / ~ - besides ${NUMBER_PLACEHOLDER}`
  }
  return null
}

/**
 * The ARI `endpoint` to originate for a destination that passes `validateDestination(…, 'ari', rules)`.
 * Without raw dial strings only numbers and extensions (`+`, digits, `*`, `#`: nothing Asterisk reads as a separator,
 * an endpoint or a trunk) replace every `{number}` in the template. With them, a destination carrying a channel
 * technology is dialled as written, and a `sip:`/`sips:` URI is substituted without its scheme, so the default
 * `PJSIP/{number}` yields chan_pjsip's `PJSIP/user@endpoint` form (the URI's host names a PJSIP endpoint); to reach
 * arbitrary SIP hosts an admin sets a template such as `PJSIP/mytrunk/sip:{number}`.
 */
export function buildAriDialString(
  destination: string,
  template: string = DEFAULT_DIAL_STRING_TEMPLATE,
  rules: DestinationRules = NO_RAW_DIAL_STRINGS,
): string {
  const problem = validateDestination(destination, ARI_PROVIDER, rules)
  if (problem) throw new AddressError(`Destination ${JSON.stringify(destination)} ${problem}`)
  if (CHANNEL_TECHNOLOGY.test(destination)) return destination
  if (!template.includes(NUMBER_PLACEHOLDER))
    throw new AddressError(`Dial string template must contain ${NUMBER_PLACEHOLDER}`)
  return substituteNumber(template, destination.replace(SIP_SCHEME, ''))
}

// Plain replacement, not a format engine: other braces in a template stay literal instead of throwing.
const substituteNumber = (template: string, number: string) => template.split(NUMBER_PLACEHOLDER).join(number)
