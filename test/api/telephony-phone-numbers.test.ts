import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'
import { addPhoneNumber, CONFIGS_PATH, createConfiguration, VALID_CONFIGS } from '../support/telephony'

let t: TestApp
let configId: number
const numbersPath = () => `${CONFIGS_PATH}/${configId}/phone-numbers`
beforeEach(async () => {
  t = createTestApp()
  configId = (await createConfiguration(t, 'pbx', VALID_CONFIGS.ari.config)).id
})
afterEach(() => t.close())

describe('phone numbers: addresses', () => {
  const NORMALISED: [string, Record<string, unknown>, string, string][] = [
    ['E.164', { address: '+1 (415) 555-0100' }, '+14155550100', 'pstn'],
    ['national with country', { address: '080 4307 1383', country_code: 'in' }, '+918043071383', 'pstn'],
    ['international access prefix', { address: '00442071838750', country_code: 'GB' }, '+442071838750', 'pstn'],
    ['SIP URI', { address: 'SIP:Alice@PBX.Example.com:5060' }, 'sip:Alice@pbx.example.com', 'sip_uri'],
    [
      'SIP URI, other port',
      { address: 'sips:bob@pbx.example.com:5071;Transport=TLS' },
      'sips:bob@pbx.example.com:5071;transport=tls',
      'sip_uri',
    ],
    ['extension', { address: '1001' }, '1001', 'sip_extension'],
    ['named extension (formatting characters dropped)', { address: 'Support-Queue' }, 'supportqueue', 'sip_extension'],
  ]

  test.each(NORMALISED)('%s is normalised and the address kept as written', async (_name, body, normalized, type) => {
    const created = await addPhoneNumber(t, configId, body)
    expect(created).toMatchObject({
      address: body.address,
      address_normalized: normalized,
      address_type: type,
      telephony_configuration_id: configId,
    })
  })

  test('a record has every field of the reference shape', async () => {
    const created = await addPhoneNumber(t, configId, {
      address: '+14155550100',
      label: 'Main line',
      extra_metadata: { site: 'HQ' },
    })
    expect(created).toEqual({
      id: created.id,
      telephony_configuration_id: configId,
      address: '+14155550100',
      address_normalized: '+14155550100',
      address_type: 'pstn',
      country_code: null,
      label: 'Main line',
      inbound_workflow_id: null,
      inbound_workflow_name: null,
      telephony_trunk_id: null,
      is_active: true,
      is_default_caller_id: false,
      extra_metadata: { site: 'HQ' },
      created_at: '2026-01-05T10:00:00.000Z',
      updated_at: '2026-01-05T10:00:00.000Z',
      provider_sync: null,
    })
  })

  test('422: bare national digits need a known country_code; field limits', async () => {
    const bare = await t.request('POST', numbersPath(), { body: { address: '08043071383' } })
    expect(bare.status).toBe(422)
    expect(bare.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body'] })
    expect(bare.body.detail[0].msg).toStartWith("Value error, PSTN addresses without a leading '+' need a country_code")
    const unknownCountry = await t.request('POST', numbersPath(), {
      body: { address: '0701234567', country_code: 'SE' },
    })
    expect(unknownCountry.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'country_code'] })
    const cases: [unknown, { type: string; loc: string[] }][] = [
      [{ address: '' }, { type: 'string_too_short', loc: ['body', 'address'] }],
      [
        { address: '+14155550100', country_code: 'USA' },
        { type: 'string_too_long', loc: ['body', 'country_code'] },
      ],
      [
        { address: '+14155550100', label: 'x'.repeat(65) },
        { type: 'string_too_long', loc: ['body', 'label'] },
      ],
      [{}, { type: 'missing', loc: ['body', 'address'] }],
    ]
    for (const [body, expected] of cases) {
      const response = await t.request('POST', numbersPath(), { body })
      expect(response.status).toBe(422)
      expect(response.body.detail).toContainEqual(expect.objectContaining(expected))
    }
  })

  test('an address that cannot be normalised is a 400', async () => {
    const response = await t.request('POST', numbersPath(), { body: { address: 'sip:alice@' } })
    expect(response.status).toBe(400)
    expect(response.body.detail).toStartWith('Invalid address: ')
  })

  test('addresses are unique within the organization (409), across its configurations; other organizations may reuse them', async () => {
    await addPhoneNumber(t, configId, { address: '+14155550100' })
    const otherConfig = await createConfiguration(t, 'twilio', VALID_CONFIGS.twilio.config)
    const samePlace = await t.request('POST', numbersPath(), { body: { address: '+1 415 555 0100' } })
    const otherPlace = await t.request('POST', `${CONFIGS_PATH}/${otherConfig.id}/phone-numbers`, {
      body: { address: '14155550100', country_code: 'US' },
    })
    for (const response of [samePlace, otherPlace]) {
      expect(response.status).toBe(409)
      expect(response.body).toEqual({ detail: 'A phone number with this address already exists in the org.' })
    }
    const acme = t.newOrg('acme')
    const theirConfig = await createConfiguration(t, 'theirs', VALID_CONFIGS.ari.config, { key: acme.key })
    await addPhoneNumber(t, theirConfig.id, { address: '+14155550100' }, acme.key)
  })
})

describe('phone numbers: lifecycle', () => {
  test('list by creation, get, partial update, delete', async () => {
    const first = await addPhoneNumber(t, configId, { address: '+14155550100', label: 'one' })
    const second = await addPhoneNumber(t, configId, { address: '1002' })
    const listed = await t.request('GET', numbersPath())
    expect(listed.body.phone_numbers.map((number: any) => number.id)).toEqual([first.id, second.id])
    expect((await t.request('GET', `${numbersPath()}/${first.id}`)).body).toEqual(first)

    const updated = await t.request('PUT', `${numbersPath()}/${first.id}`, {
      body: { is_active: false, extra_metadata: { note: 'x' } },
    })
    expect(updated.body).toMatchObject({
      label: 'one',
      is_active: false,
      extra_metadata: { note: 'x' },
      address: '+14155550100',
    })
    const unchanged = await t.request('PUT', `${numbersPath()}/${first.id}`, { body: { label: null, is_active: null } })
    expect(unchanged.body).toMatchObject({ label: 'one', is_active: false })

    const deleted = await t.request('DELETE', `${numbersPath()}/${first.id}`)
    expect(deleted.body).toEqual({ message: 'Phone number deleted', provider_sync: null })
    expect((await t.request('GET', `${numbersPath()}/${first.id}`)).status).toBe(404)
  })

  test('a new country_code re-normalises a national address', async () => {
    const created = await addPhoneNumber(t, configId, { address: '02071838750', country_code: 'GB' })
    expect(created.address_normalized).toBe('+442071838750')
    const moved = await t.request('PUT', `${numbersPath()}/${created.id}`, { body: { country_code: 'IE' } })
    expect(moved.body).toMatchObject({ country_code: 'IE', address_normalized: '+3532071838750' })
  })

  test('one default caller id per configuration', async () => {
    const first = await addPhoneNumber(t, configId, { address: '+14155550100', is_default_caller_id: true })
    const second = await addPhoneNumber(t, configId, { address: '+14155550101', is_default_caller_id: true })
    const defaults = async () =>
      (await t.request('GET', numbersPath())).body.phone_numbers
        .filter((number: any) => number.is_default_caller_id)
        .map((number: any) => number.id)
    expect(await defaults()).toEqual([second.id])
    const set = await t.request('POST', `${numbersPath()}/${first.id}/set-default-caller`)
    expect(set.body.is_default_caller_id).toBe(true)
    expect(await defaults()).toEqual([first.id])
  })

  test('links: an inbound workflow must exist in the organization, a trunk must be on this configuration', async () => {
    const workflow = await t.request('POST', numbersPath(), {
      body: { address: '+14155550100', inbound_workflow_id: 99 },
    })
    expect(workflow.status).toBe(404)
    expect(workflow.body).toEqual({ detail: 'Workflow not found' })
    const trunk = await t.request('POST', numbersPath(), { body: { address: '+14155550100', telephony_trunk_id: 99 } })
    expect(trunk.status).toBe(404)
    expect(trunk.body).toEqual({ detail: 'Trunk not found on this telephony configuration' })
    const created = await addPhoneNumber(t, configId, { address: '+14155550100' })
    const update = await t.request('PUT', `${numbersPath()}/${created.id}`, { body: { telephony_trunk_id: 99 } })
    expect(update.status).toBe(404)
    const cleared = await t.request('PUT', `${numbersPath()}/${created.id}`, {
      body: { clear_trunk: true, clear_inbound_workflow: true },
    })
    expect(cleared.body).toMatchObject({ telephony_trunk_id: null, inbound_workflow_id: null })
  })

  test("another organization's numbers and configurations do not exist for it", async () => {
    const created = await addPhoneNumber(t, configId, { address: '+14155550100' })
    const acme = t.newOrg('acme')
    const theirConfig = await createConfiguration(t, 'theirs', VALID_CONFIGS.ari.config, { key: acme.key })
    const viaTheirConfig = `${CONFIGS_PATH}/${theirConfig.id}/phone-numbers/${created.id}`
    for (const [method, body] of [['GET'], ['PUT', { label: 'x' }], ['DELETE'], ['POST']] as const) {
      const path = method === 'POST' ? `${viaTheirConfig}/set-default-caller` : viaTheirConfig
      const response = await t.request(method, path, { key: acme.key, body })
      expect(response.status, `${method} ${path}`).toBe(404)
      expect(response.body).toEqual({ detail: 'Phone number not found' })
    }
    const viaMyConfig = await t.request('GET', `${numbersPath()}/${created.id}`, { key: acme.key })
    expect(viaMyConfig.body).toEqual({ detail: 'Telephony configuration not found' })
    expect((await t.request('GET', `${numbersPath()}/${created.id}`)).status).toBe(200)
  })
})
