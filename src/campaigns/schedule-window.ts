/**
 * Campaign calling windows: weekly slots `[start_time, end_time)` in the schedule's IANA time zone,
 * `day_of_week` 0 = Monday … 6 = Sunday, minute resolution.
 *
 * `end_time` may be `24:00` (end of day), the only way to include the day's last minute; a slot never crosses
 * midnight (split overnight hours into two slots).
 */

import type { ScheduleConfig, ScheduleSlot } from '../db/schema/campaigns'
import type { Problem } from '../lib/problem'

export type { ScheduleConfig, ScheduleSlot }

export const MIN_SLOTS = 1
export const MAX_SLOTS = 50
/** How far ahead `nextWindowStart` looks: a week plus a day, so every weekly slot is seen once whatever the DST. */
export const LOOKAHEAD_MS = 8 * 24 * 60 * 60 * 1000

const MINUTE_MS = 60_000
const MINUTES_PER_DAY = 24 * 60
const WEEKDAY_INDEX: Readonly<Record<string, number>> = { Mon: 0, Tue: 1, Wed: 2, Thu: 3, Fri: 4, Sat: 5, Sun: 6 }

// Keyed by the zone name as given; capped because names come from requests and case variants are all valid.
const formatters = new Map<string, Intl.DateTimeFormat>()
const MAX_CACHED_FORMATTERS = 1000

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone)
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    })
    if (formatters.size >= MAX_CACHED_FORMATTERS) formatters.clear()
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/** True for a time zone name the runtime knows. Fixed offsets such as `+05:30` are refused: they are not IANA zones. */
export function isValidTimeZone(timeZone: string): boolean {
  if (timeZone === '' || /^[+-]/.test(timeZone)) return false
  try {
    formatterFor(timeZone)
    return true
  } catch {
    return false
  }
}

type WallClock = {
  dayOfWeek: number
  minuteOfDay: number
  /** Minutes since 1970-01-01T00:00 of the local calendar, i.e. the wall clock read as if it were UTC. */
  wallMinutes: number
}

function wallClock(timeZone: string, at: number): WallClock {
  const fields: Record<string, string> = {}
  for (const part of formatterFor(timeZone).formatToParts(at)) fields[part.type] = part.value
  const hour = Number(fields.hour)
  const minute = Number(fields.minute)
  const localAsUtc = Date.UTC(Number(fields.year), Number(fields.month) - 1, Number(fields.day), hour, minute)
  return {
    dayOfWeek: WEEKDAY_INDEX[fields.weekday],
    minuteOfDay: hour * 60 + minute,
    wallMinutes: localAsUtc / MINUTE_MS,
  }
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5))

const inSlot = (slot: ScheduleSlot, wall: WallClock) =>
  slot.day_of_week === wall.dayOfWeek &&
  minutesOf(slot.start_time) <= wall.minuteOfDay &&
  wall.minuteOfDay < minutesOf(slot.end_time)

/** A disabled or absent schedule allows every instant. */
const unrestricted = (schedule: ScheduleConfig | null | undefined): schedule is null | undefined =>
  !schedule || !schedule.enabled

/**
 * Whether a call may start at `at`. An enabled schedule with an unknown zone or no slots allows nothing: dialling
 * at the wrong hour is worse than not dialling (the zone is validated on input, so this only guards stored data).
 */
export function isWithinSchedule(schedule: ScheduleConfig | null | undefined, at: Date): boolean {
  if (unrestricted(schedule)) return true
  if (!isValidTimeZone(schedule.timezone)) return false
  const wall = wallClock(schedule.timezone, at.getTime())
  return schedule.slots.some((slot) => inSlot(slot, wall))
}

/** Wall-clock minutes from `wall` until the next slot start strictly after it (a week if only this very minute starts one). */
function wallMinutesToNextStart(slots: readonly ScheduleSlot[], wall: WallClock): number {
  const minuteOfWeek = wall.dayOfWeek * MINUTES_PER_DAY + wall.minuteOfDay
  let nearest = Infinity
  for (const slot of slots) {
    const startOfWeek = slot.day_of_week * MINUTES_PER_DAY + minutesOf(slot.start_time)
    const ahead = (startOfWeek - minuteOfWeek + 7 * MINUTES_PER_DAY) % (7 * MINUTES_PER_DAY)
    nearest = Math.min(nearest, ahead === 0 ? 7 * MINUTES_PER_DAY : ahead)
  }
  return nearest
}

/** Minutes the zone's wall clock is ahead of UTC at `t`. */
const utcOffsetMinutes = (timeZone: string, t: number) => wallClock(timeZone, t).wallMinutes - t / MINUTE_MS

/** The first minute in (from, to] whose UTC offset differs from `offset`, given that `to` has another offset. */
function firstMinuteWithOtherOffset(timeZone: string, from: number, to: number, offset: number): number {
  let low = from
  let high = to
  while (high - low > MINUTE_MS) {
    const middle = low + Math.floor((high - low) / 2 / MINUTE_MS) * MINUTE_MS
    if (utcOffsetMinutes(timeZone, middle) === offset) low = middle
    else high = middle
  }
  return high
}

/**
 * The earliest instant at or after `at` when calls may start (`at` itself when inside a window), or null when no
 * window opens within `LOOKAHEAD_MS`. Minute-exact across DST changes: a slot starting inside a skipped hour opens
 * when the clock lands in it, a slot wholly inside a skipped hour does not open that day, and a repeated hour is
 * checked on both passes.
 */
export function nextWindowStart(schedule: ScheduleConfig | null | undefined, at: Date): Date | null {
  if (isWithinSchedule(schedule, at)) return at
  if (unrestricted(schedule) || !isValidTimeZone(schedule.timezone) || schedule.slots.length === 0) return null
  const { timezone, slots } = schedule
  const limit = at.getTime() + LOOKAHEAD_MS
  // Zone offsets are whole minutes, so the answer is always a minute boundary.
  let t = Math.ceil(at.getTime() / MINUTE_MS) * MINUTE_MS
  while (t <= limit) {
    const wall = wallClock(timezone, t)
    if (slots.some((slot) => inSlot(slot, wall))) return new Date(t)
    // Until the next slot start the wall clock runs with real time, unless the offset changes on the way: then stop
    // at the change and look again, since the wall clock may have skipped past or gone back into a window.
    const target = t + wallMinutesToNextStart(slots, wall) * MINUTE_MS
    const offset = wall.wallMinutes - t / MINUTE_MS
    t = utcOffsetMinutes(timezone, target) === offset ? target : firstMinuteWithOtherOffset(timezone, t, target, offset)
  }
  return null
}

const TIME = /^(?:[01]\d|2[0-3]):[0-5]\d$/

/** Problems with requested slots, located relative to the schedule (e.g. `slots`, 1, `start_time`); empty when valid. */
export function validateSlots(slots: readonly ScheduleSlot[]): Problem[] {
  const problems: Problem[] = []
  if (slots.length < MIN_SLOTS || slots.length > MAX_SLOTS) {
    problems.push({
      path: ['slots'],
      message: `slots must have ${MIN_SLOTS} to ${MAX_SLOTS} entries, got ${slots.length}`,
    })
  }
  slots.forEach((slot, index) => {
    if (!Number.isInteger(slot.day_of_week) || slot.day_of_week < 0 || slot.day_of_week > 6) {
      problems.push({
        path: ['slots', index, 'day_of_week'],
        message: `day_of_week must be 0 (Monday) to 6 (Sunday), got ${slot.day_of_week}`,
      })
    }
    const startValid = TIME.test(slot.start_time)
    const endValid = TIME.test(slot.end_time) || slot.end_time === '24:00'
    if (!startValid)
      problems.push({
        path: ['slots', index, 'start_time'],
        message: `start_time must be HH:MM from 00:00 to 23:59, got '${slot.start_time}'`,
      })
    if (!endValid)
      problems.push({
        path: ['slots', index, 'end_time'],
        message: `end_time must be HH:MM from 00:01 to 24:00, got '${slot.end_time}'`,
      })
    if (startValid && endValid && minutesOf(slot.start_time) >= minutesOf(slot.end_time)) {
      problems.push({ path: ['slots', index], message: 'start_time must be before end_time' })
    }
  })
  return problems
}
