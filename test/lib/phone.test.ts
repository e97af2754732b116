import { describe, expect, test } from 'bun:test'
import {
  AddressError,
  buildAriDialString,
  dialCodeFor,
  isE164,
  normalizeAddress,
  validateDestination,
  validateDialStringTemplate,
} from '../../src/lib/phone'

describe('normalizeAddress', () => {
  test.each([
    // [raw, countryCode, normalized, type]
    ['+1 (415) 555-0100', null, '+14155550100', 'pstn'],
    ['  +44 20 7946 0958 ', undefined, '+442079460958', 'pstn'],
    ['14155550100', null, '+14155550100', 'pstn'],
    ['08043071383', 'IN', '+918043071383', 'pstn'],
    ['08043071383', 'in', '+918043071383', 'pstn'],
    ['9123456789', 'IN', '+919123456789', 'pstn'], // a mobile number that happens to start with 91
    ['919876543210', 'IN', '+919876543210', 'pstn'], // already carries the country code
    ['4155550100', 'US', '+14155550100', 'pstn'],
    ['14155550100', 'US', '+14155550100', 'pstn'],
    ['07700 900123', 'GB', '+447700900123', 'pstn'],
    ['447700900123', 'GB', '+447700900123', 'pstn'],
    ['0612345678', 'IT', '+390612345678', 'pstn'], // Italy keeps the leading 0
    ['3912345678', 'IT', '+393912345678', 'pstn'], // Italian mobile starting with 39
    ['0044 20 7946 0958', null, '+442079460958', 'pstn'], // 00 international prefix
    ['0049 30 1234567', 'DE', '+49301234567', 'pstn'],
    ['+14155550100', 'GB', '+14155550100', 'pstn'], // a '+' number ignores the hint
    ['08043071383', 'XX', '08043071383', 'sip_extension'], // unknown hint ignored; 0… cannot be E.164 alone
    ['08043071383', null, '08043071383', 'sip_extension'],
    ['1234567', null, '1234567', 'sip_extension'], // 7 digits: too short for PSTN
    ['1234567890123456', null, '1234567890123456', 'sip_extension'], // 16 digits: too long
    ['+1234', null, '1234', 'sip_extension'],
    ['*97', null, '*97', 'sip_extension'],
    ['Reception', null, 'reception', 'sip_extension'],
  ] as const)('%p (%p) → %p %p', (raw, country, normalized, type) => {
    expect(normalizeAddress(raw, country)).toEqual({ address_normalized: normalized, address_type: type })
  })

  test.each([
    ['SIP:Alice@Example.COM', 'sip:Alice@example.com'],
    ['sip:Alice@Example.com:5060', 'sip:Alice@example.com'],
    ['sips:Bob@Example.com:5061', 'sips:Bob@example.com'],
    ['sips:Bob@example.com:5060', 'sips:Bob@example.com:5060'], // 5060 is not the sips default
    ['sip:Bob@example.com:5070', 'sip:Bob@example.com:5070'],
    ['sip:Bob@Example.com;Transport=TCP', 'sip:Bob@example.com;transport=tcp'],
    ['sip:Bob@Example.com:5060;Transport=TCP?Subject=Hi', 'sip:Bob@example.com;transport=tcp?Subject=Hi'],
    ['sip:PBX.Example.com', 'sip:pbx.example.com'],
    ['sip:Carol@[2001:DB8::1]:5060', 'sip:Carol@[2001:db8::1]'],
    ['  sip:Dave@HOST  ', 'sip:Dave@host'],
  ])('SIP URI %p → %p', (raw, normalized) => {
    expect(normalizeAddress(raw)).toEqual({ address_normalized: normalized, address_type: 'sip_uri' })
  })

  test.each(['', '   ', 'sip:', 'sip:alice@', 'sip:alice@host:abc', 'sip:alice@[::1'])(
    '%p is not an address',
    (raw) => {
      expect(() => normalizeAddress(raw)).toThrow(AddressError)
    },
  )
})

test('dialCodeFor knows common countries in any case and nothing else', () => {
  expect(dialCodeFor('US')).toBe('1')
  expect(dialCodeFor('ca')).toBe('1')
  expect(dialCodeFor('GB')).toBe('44')
  expect(dialCodeFor('IN')).toBe('91')
  expect(dialCodeFor('AE')).toBe('971')
  expect(dialCodeFor('SG')).toBe('65')
  expect(dialCodeFor('BR')).toBe('55')
  expect(dialCodeFor('XX')).toBeNull()
  expect(dialCodeFor('')).toBeNull()
})

test('isE164: plus, no leading zero, 8 to 15 digits', () => {
  for (const ok of ['+14155550100', '+12345678', '+123456789012345']) expect(isE164(ok)).toBe(true)
  for (const bad of [
    '14155550100',
    '+1234567',
    '+1234567890123456',
    '+04155550100',
    '+1 4155550100',
    '+1415555010a',
    '',
  ]) {
    expect(isE164(bad)).toBe(false)
  }
})

describe('validateDestination', () => {
  const carriers = ['twilio', 'plivo', 'vobiz', 'telnyx', 'vonage', 'cloudonix', 'exotel']

  test('carrier providers accept only E.164', () => {
    for (const provider of carriers) {
      expect(validateDestination('+14155550100', provider)).toBeNull()
      expect(validateDestination('14155550100', provider)).toContain('E.164')
      expect(validateDestination('1001', provider)).toContain('E.164')
      expect(validateDestination('sip:alice@example.com', provider)).toContain('E.164')
      expect(validateDestination('PJSIP/1001', provider)).toContain('E.164')
    }
  })

  test.each(['+14155550100', '1001', '*97', '#1'])('ari accepts %p', (value) => {
    expect(validateDestination(value, 'ari')).toBeNull()
  })

  test.each([
    'sip:alice@example.com',
    'sips:Alice.Smith@pbx.example.com:5061',
    'SIP:1001@pbx',
    'sip:0044912345678@intl-trunk',
  ])(
    'ari takes the SIP URI %p (its host picks the endpoint or trunk) only when the configuration allows raw dial strings',
    (value) => {
      expect(validateDestination(value, 'ari')).toContain('allow_raw_dial_strings')
      expect(validateDestination(value, 'ari', { rawDialStrings: true })).toBeNull()
    },
  )

  const RAW_DIAL_STRINGS = [
    'PJSIP/1001',
    'PJSIP/mytrunk/sip:alice@example.com:5070',
    'PJSIP/+14155550100@mytrunk',
    'SIP/trunk/5551234',
    'IAX2/peer/100',
    'Local/100@from-internal',
    'Local/s@from-internal',
    'Local/100@from-internal/n',
    'DAHDI/g1/5551234',
  ]

  test.each(RAW_DIAL_STRINGS)(
    'ari refuses the raw dial string %p by default (toll fraud through a trigger key)',
    (value) => {
      expect(validateDestination(value, 'ari')).toContain('allow_raw_dial_strings')
      expect(validateDestination(value, 'ari', { rawDialStrings: false })).toContain('allow_raw_dial_strings')
    },
  )

  test.each(RAW_DIAL_STRINGS)('ari accepts the raw dial string %p when the configuration allows them', (value) => {
    expect(validateDestination(value, 'ari', { rawDialStrings: true })).toBeNull()
  })

  test.each([
    ['+1 415 555 0100', 'spaces'],
    ['1001,1002', 'commas'],
    ['PJSIP/1001&PJSIP/1002', "'&'"],
    ['1001\n', 'spaces'],
    ['\t1001', 'spaces'],
  ])('%p is refused for carrying a separator', (value, word) => {
    expect(validateDestination(value, 'ari')).toContain(word)
    expect(validateDestination(value, 'twilio')).toContain(word)
  })

  test.each([
    'PJSIP/1001|PJSIP/1002',
    'PJSIP/1001^x',
    'PJSIP/${EXTEN}',
    'Local/100@ctx(foo)',
    'PJSIP/"1001"',
    "PJSIP/'1001'",
    'PJSIP/1001;transport=tcp',
    'pjsip/1001', // technologies are matched case-sensitively
    'Console/dsp',
    'PJSIP/',
    'PJSIP//1001',
    'sip:alice', // no host
    'sip:alice@example.com:70000',
    'sip:alice@exa_mple.com',
    'alice',
    '1001a',
    '+1234567', // too short for E.164, and '+' is not an extension character
    '+04155550100',
    'x'.repeat(129),
  ])('ari refuses %p, raw dial strings allowed or not', (value) => {
    expect(validateDestination(value, 'ari', { rawDialStrings: true })).not.toBeNull()
    expect(validateDestination(value, 'ari')).not.toBeNull()
  })

  test('empty and over-long values name the rule', () => {
    expect(validateDestination('', 'ari')).toBe('must not be empty')
    expect(validateDestination(`PJSIP/${'1'.repeat(123)}`, 'ari', { rawDialStrings: true })).toContain('128')
    expect(validateDestination(`PJSIP/${'1'.repeat(122)}`, 'ari', { rawDialStrings: true })).toBeNull()
  })
})

describe('buildAriDialString', () => {
  test('numbers and extensions go through the template, default PJSIP/{number}', () => {
    expect(buildAriDialString('+14155550100')).toBe('PJSIP/+14155550100')
    expect(buildAriDialString('1001')).toBe('PJSIP/1001')
    expect(buildAriDialString('+14155550100', 'Local/{number}@from-internal')).toBe('Local/+14155550100@from-internal')
  })

  test('every {number} is replaced; other braces stay literal', () => {
    expect(buildAriDialString('*97', 'Local/{number}@ctx/{number}')).toBe('Local/*97@ctx/*97')
    expect(buildAriDialString('#1', 'PJSIP/{number}@{trunk}')).toBe('PJSIP/#1@{trunk}')
  })

  test('destinations with a channel technology are dialled as written only when raw dial strings are allowed', () => {
    for (const value of ['PJSIP/1001', 'SIP/trunk/555', 'IAX2/peer/100', 'Local/100@from-internal', 'DAHDI/g1/555']) {
      expect(buildAriDialString(value, 'Local/{number}@other', { rawDialStrings: true })).toBe(value)
      expect(() => buildAriDialString(value, 'Local/{number}@other')).toThrow('allow_raw_dial_strings')
    }
  })

  test('a SIP URI is substituted without its scheme when raw dial strings are allowed, refused otherwise', () => {
    const raw = { rawDialStrings: true }
    expect(buildAriDialString('sip:alice@office-pbx', undefined, raw)).toBe('PJSIP/alice@office-pbx')
    expect(buildAriDialString('SIPS:bob@example.com:5061', 'PJSIP/mytrunk/sip:{number}', raw)).toBe(
      'PJSIP/mytrunk/sip:bob@example.com:5061',
    )
    expect(() => buildAriDialString('sip:0044912345678@intl-trunk')).toThrow('allow_raw_dial_strings')
  })

  test('refuses unsafe destinations and templates without {number}', () => {
    expect(() => buildAriDialString('1001&PJSIP/666')).toThrow(AddressError)
    expect(() => buildAriDialString('1001,tT')).toThrow(AddressError)
    expect(() => buildAriDialString('1001', 'PJSIP/fixed')).toThrow('{number}')
  })
})

test('validateDialStringTemplate', () => {
  expect(validateDialStringTemplate('PJSIP/{number}')).toBeNull()
  expect(validateDialStringTemplate('Local/{number}@from-internal')).toBeNull()
  expect(validateDialStringTemplate('PJSIP/mytrunk/sip:{number}@carrier.example.com')).toBeNull()
  expect(validateDialStringTemplate('PJSIP/fixed')).toContain('{number}')
  expect(validateDialStringTemplate('{number}')).toContain('must start with')
  expect(validateDialStringTemplate('PJSIP/{number},30')).toContain('may only contain')
  expect(validateDialStringTemplate('PJSIP/{number}&PJSIP/spy')).toContain('may only contain')
})
