/**
 * ISO 8601 date-times as Python's `datetime.fromisoformat` and Pydantic accept them: `YYYY-MM-DD`, then optionally
 * `T`/`t`/space and `HH:MM[:SS[.fraction]]`, then optionally `Z` or `±HH[:MM]`. No zone means UTC.
 * Failures carry Pydantic's error type and wording so a 422 item reads like the reference platform's.
 */

export type ParsedDateTime = { ok: true; ms: number; dateOnly: boolean }
export type DateTimeProblem = { ok: false; type: 'datetime_from_date_parsing' | 'datetime_parsing'; error: string }

const DATE = /^(\d{4})-(\d{2})-(\d{2})/
const TIME = /^[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/

const dateProblem = (error: string): DateTimeProblem => ({ ok: false, type: 'datetime_from_date_parsing', error })
const timeProblem = (error: string): DateTimeProblem => ({ ok: false, type: 'datetime_parsing', error })

function dateError(value: string): string {
  if (value.length < 10) return 'input is too short'
  if (!/^\d{4}$/.test(value.slice(0, 4))) return 'invalid character in year'
  if (value[4] !== '-' || value[7] !== '-') return 'invalid date separator, expected `-`'
  if (!/^\d{2}$/.test(value.slice(5, 7))) return 'invalid character in month'
  return 'invalid character in day'
}

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate()

/** Why the text after a valid date is not a time with an optional zone. */
function timeError(rest: string): string {
  if (!/^[Tt ]/.test(rest)) return 'unexpected extra characters at the end of the input'
  const time = rest.slice(1)
  if (time.length < 5) return 'input is too short'
  if (!/^\d{2}$/.test(time.slice(0, 2))) return 'invalid character in hour'
  if (time[2] !== ':') return 'invalid time separator, expected `:`'
  if (!/^\d{2}$/.test(time.slice(3, 5))) return 'invalid character in minute'
  return 'unexpected extra characters at the end of the input'
}

export function parseIsoDateTime(value: string): ParsedDateTime | DateTimeProblem {
  const date = DATE.exec(value)
  if (!date) return dateProblem(dateError(value))
  const [year, month, day] = date.slice(1, 4).map(Number)
  if (month < 1 || month > 12) return dateProblem('month value is outside expected range of 1-12')
  if (day < 1 || day > daysIn(year, month)) return dateProblem('day value is outside expected range')
  const rest = value.slice(10)
  if (rest === '') return { ok: true, ms: Date.UTC(year, month - 1, day), dateOnly: true }
  const time = TIME.exec(rest)
  if (!time) return timeProblem(timeError(rest))
  const [hour, minute, second = 0] = time.slice(1, 4).map((part) => Number(part ?? 0))
  if (hour > 23) return timeProblem('hour value is outside expected range of 0-23')
  if (minute > 59) return timeProblem('minute value is outside expected range of 0-59')
  if (second > 59) return timeProblem('second value is outside expected range of 0-59')
  const [offsetHours, offsetMinutes] = [Number(time[7] ?? 0), Number(time[8] ?? 0)]
  if (offsetHours > 23 || offsetMinutes > 59) return timeProblem('timezone offset must be less than 24 hours')
  const offsetMs = (time[6] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  const millis = Math.floor(Number(`0.${time[4] ?? 0}`) * 1000)
  return { ok: true, ms: Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMs, dateOnly: false }
}
