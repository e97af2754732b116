import { expect, test } from 'bun:test'
import { whenDatabaseAnswers } from '../../src/db/when-answering'
import { DomainError } from '../../src/lib/errors'

const down = () => new DomainError('unavailable', 'The database could not be reached')

test('a write is tried again while the database is unavailable, and done once it answers; the wait is told once', async () => {
  let attempts = 0
  const waits: DomainError[] = []
  const written = await whenDatabaseAnswers(
    () => {
      attempts++
      if (attempts < 3) throw down()
      return 'written'
    },
    { retryMs: 5, onWait: (error) => waits.push(error) },
  )
  expect(written).toBe('written')
  expect(attempts).toBe(3)
  expect(waits).toHaveLength(1)
})

test('any other error is thrown at once; an outage longer than the limit throws its error', async () => {
  let attempts = 0
  const failing = whenDatabaseAnswers(() => {
    attempts++
    throw new Error('UNIQUE constraint failed')
  })
  await expect(failing).rejects.toThrow('UNIQUE constraint failed')
  expect(attempts).toBe(1)
  await expect(
    whenDatabaseAnswers(
      () => {
        throw down()
      },
      { retryMs: 5, giveUpMs: 30 },
    ),
  ).rejects.toMatchObject({ kind: 'unavailable' })
})
