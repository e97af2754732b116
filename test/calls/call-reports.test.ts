import { expect, test } from 'bun:test'
import { orderedCallReports } from '../../src/calls/outcomes'
import { DomainError } from '../../src/lib/errors'
import type { CallReport } from '../../src/telephony/provider'
import { waitFor } from '../support/wait'

// How call reports reach their runs when the database is away (src/boot.ts applies every provider's reports this way).

const answered = (callId: string): CallReport => ({ kind: 'answered', callId, at: 1 })
const ended = (callId: string): CallReport => ({ kind: 'ended', callId, outcome: 'completed', at: 2, answeredAt: 1 })

test('a report the database could not take waits, with every report after it; all are applied in order once it answers', async () => {
  let databaseDown = true
  const applied: CallReport[] = []
  const errors: unknown[] = []
  const report = orderedCallReports(
    (given) => {
      if (databaseDown) throw new DomainError('unavailable', 'The database could not be reached')
      applied.push(given)
    },
    (error) => errors.push(error),
    10,
  )
  const reports = [answered('a'), ended('a'), ended('b')]
  for (const given of reports) report(given)
  // later reports are not applied ahead of the one waiting, even if the database is back when they come
  databaseDown = false
  report(answered('c'))
  expect(applied).toEqual([])
  await waitFor('every report applied', () => applied.length === 4)
  expect(applied).toEqual([...reports, answered('c')])
  expect(errors).toEqual([])
  // with nothing waiting, a report is applied at once
  report(ended('c'))
  expect(applied.at(-1)).toEqual(ended('c'))
})

test('any other failure is told and not tried again, and does not hold back the reports after it', () => {
  const applied: CallReport[] = []
  const errors: [unknown, CallReport][] = []
  const report = orderedCallReports(
    (given) => {
      if (given.callId === 'bad') throw new Error('no such column')
      applied.push(given)
    },
    (error, given) => errors.push([error, given]),
  )
  report(ended('bad'))
  report(ended('good'))
  expect(applied).toEqual([ended('good')])
  expect(errors).toEqual([[new Error('no such column'), ended('bad')]])
})
