import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'
import { addPhoneNumber, CONFIGS_PATH, createConfiguration, VALID_CONFIGS } from '../support/telephony'

let t: TestApp
let cloudonixId: number
const trunksPath = (configId = cloudonixId) => `${CONFIGS_PATH}/${configId}/trunks`
const INDIA = { region: 'india', sip_domain: 'acme.cloudonix.net' }

beforeEach(async () => {
  t = createTestApp()
  cloudonixId = (await createConfiguration(t, 'cx', VALID_CONFIGS.cloudonix.config)).id
})
afterEach(() => t.close())

async function createTrunk(body: Record<string, unknown>): Promise<any> {
  const response = await t.request('POST', trunksPath(), { body })
  expect(response.status, response.text).toBe(200)
  return response.body
}

describe('trunks', () => {
  test('providers without trunks answer 400 on every trunk endpoint', async () => {
    const twilio = await createConfiguration(t, 'tw', VALID_CONFIGS.twilio.config)
    for (const [method, path, body] of [
      ['GET', trunksPath(twilio.id)],
      ['POST', trunksPath(twilio.id), { name: 'x' }],
      ['PUT', `${trunksPath(twilio.id)}/1`, { name: 'x' }],
      ['DELETE', `${trunksPath(twilio.id)}/1`],
    ] as const) {
      const response = await t.request(method, path, { body })
      expect(response.status, `${method} ${path}`).toBe(400)
      expect(response.body.detail).toStartWith('Trunks are not modelled on Twilio configurations')
    }
  })

  test('create (name stripped, region canonical), list with number counts, update, delete', async () => {
    const created = await createTrunk({ name: '  mumbai-1 ', settings: INDIA })
    expect(created).toEqual({
      id: created.id,
      name: 'mumbai-1',
      enabled: true,
      settings: { region: 'India', sip_domain: 'acme.cloudonix.net' },
      phone_number_count: 0,
      created_at: '2026-01-05T10:00:00.000Z',
      updated_at: '2026-01-05T10:00:00.000Z',
    })
    await addPhoneNumber(t, cloudonixId, { address: '+14155550100', telephony_trunk_id: created.id })
    const listed = await t.request('GET', trunksPath())
    expect(listed.body.trunks).toEqual([{ ...created, phone_number_count: 1 }])
    expect((await t.request('GET', `${CONFIGS_PATH}/${cloudonixId}`)).body.trunks).toEqual([
      { ...created, phone_number_count: 1 },
    ])

    const updated = await t.request('PUT', `${trunksPath()}/${created.id}`, {
      body: { enabled: false, settings: { region: 'uae', sip_domain: 'x.cloudonix.net' } },
    })
    expect(updated.body).toMatchObject({
      name: 'mumbai-1',
      enabled: false,
      settings: { region: 'UAE' },
      phone_number_count: 1,
    })

    const second = await createTrunk({
      name: 'global-1',
      settings: { region: 'Global', sip_domain: 'acme.cloudonix.net' },
    })
    expect((await t.request('DELETE', `${trunksPath()}/${second.id}`)).body).toEqual({ success: true })
    expect((await t.request('DELETE', `${trunksPath()}/${second.id}`)).body).toEqual({ detail: 'Trunk not found' })
  })

  test('422 on bad names and settings', async () => {
    const cases: [Record<string, unknown>, { type: string; loc: string[] }][] = [
      [
        { name: '   ', settings: INDIA },
        { type: 'string_too_short', loc: ['body', 'name'] },
      ],
      [
        { name: 'with space', settings: INDIA },
        { type: 'value_error', loc: ['body', 'name'] },
      ],
      [
        { name: 'ok', settings: { sip_domain: 'a' } },
        { type: 'missing', loc: ['body', 'settings', 'region'] },
      ],
      [
        { name: 'ok', settings: { region: 'Mars', sip_domain: 'a' } },
        { type: 'value_error', loc: ['body', 'settings', 'region'] },
      ],
      [
        { name: 'ok', settings: { region: 'India', sip_domain: '' } },
        { type: 'string_too_short', loc: ['body', 'settings', 'sip_domain'] },
      ],
    ]
    for (const [body, expected] of cases) {
      const response = await t.request('POST', trunksPath(), { body })
      expect(response.status, JSON.stringify(body)).toBe(422)
      expect(response.body.detail).toContainEqual(expect.objectContaining(expected))
    }
  })

  test('409: a duplicate name on the configuration, or deleting a trunk numbers dial out over', async () => {
    const trunk = await createTrunk({ name: 'main', settings: INDIA })
    const other = await createTrunk({ name: 'backup', settings: INDIA })
    const duplicate = await t.request('POST', trunksPath(), { body: { name: 'main', settings: INDIA } })
    expect(duplicate.status).toBe(409)
    expect(duplicate.body).toEqual({ detail: "A trunk named 'main' already exists on this configuration." })
    expect((await t.request('PUT', `${trunksPath()}/${other.id}`, { body: { name: 'main' } })).status).toBe(409)
    await addPhoneNumber(t, cloudonixId, { address: '+14155550100', telephony_trunk_id: trunk.id })
    const blocked = await t.request('DELETE', `${trunksPath()}/${trunk.id}`)
    expect(blocked.status).toBe(409)
    expect(blocked.body).toEqual({
      detail: "1 phone number(s) dial out over 'main'. Move them to another trunk before deleting it.",
    })
  })

  test('the Cloudonix checklist follows trunks and numbers', async () => {
    const stepKeys = async () =>
      (await t.request('GET', `${CONFIGS_PATH}/${cloudonixId}`)).body.setup_checklist.steps.map(
        (step: any) => `${step.key}:${step.complete}`,
      )
    expect(await stepKeys()).toEqual(['outbound_trunk:false', 'caller_id:false', 'inbound_routing:false'])
    const first = await createTrunk({ name: 'one', settings: INDIA })
    await createTrunk({ name: 'two', settings: INDIA })
    await addPhoneNumber(t, cloudonixId, { address: '+14155550100' })
    expect(await stepKeys()).toEqual([
      'outbound_trunk:true',
      'caller_id:true',
      'trunk_assignment:false',
      'inbound_routing:false',
    ])
    const [number] = (await t.request('GET', `${CONFIGS_PATH}/${cloudonixId}/phone-numbers`)).body.phone_numbers
    await t.request('PUT', `${CONFIGS_PATH}/${cloudonixId}/phone-numbers/${number.id}`, {
      body: { telephony_trunk_id: first.id },
    })
    expect(await stepKeys()).toContain('trunk_assignment:true')
  })

  test("another organization's trunks and configurations do not exist for it", async () => {
    const trunk = await createTrunk({ name: 'main', settings: INDIA })
    const acme = t.newOrg('acme')
    const theirs = await createConfiguration(t, 'theirs', VALID_CONFIGS.cloudonix.config, { key: acme.key })
    const viaTheirs = await t.request('PUT', `${trunksPath(theirs.id)}/${trunk.id}`, {
      key: acme.key,
      body: { enabled: false },
    })
    expect(viaTheirs.body).toEqual({ detail: 'Trunk not found' })
    expect((await t.request('GET', trunksPath(), { key: acme.key })).body).toEqual({
      detail: 'Telephony configuration not found',
    })
  })
})
