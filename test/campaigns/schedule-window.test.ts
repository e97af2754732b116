import { describe, expect, test } from 'bun:test'
import {
  isValidTimeZone,
  isWithinSchedule,
  nextWindowStart,
  validateSlots,
  type ScheduleConfig,
  type ScheduleSlot,
} from '../../src/campaigns/schedule-window'

const MON = 0
const TUE = 1
const SAT = 5
const SUN = 6

const schedule = (timezone: string, slots: ScheduleSlot[], enabled = true): ScheduleConfig => ({
  enabled,
  timezone,
  slots,
})
const slot = (day_of_week: number, start_time: string, end_time: string): ScheduleSlot => ({
  day_of_week,
  start_time,
  end_time,
})
const at = (iso: string) => new Date(iso)

// 2025-01-06 is a Monday; New York is UTC-5 in January.
const officeHours = schedule('America/New_York', [slot(MON, '09:00', '17:00'), slot(TUE, '09:00', '12:00')])

describe('isWithinSchedule', () => {
  test('no schedule or a disabled one allows every instant', () => {
    expect(isWithinSchedule(null, at('2025-01-06T03:00:00Z'))).toBe(true)
    expect(isWithinSchedule(undefined, at('2025-01-06T03:00:00Z'))).toBe(true)
    expect(isWithinSchedule({ ...officeHours, enabled: false }, at('2025-01-06T03:00:00Z'))).toBe(true)
  })

  test('start is inclusive, end exclusive, in the schedule zone', () => {
    expect(isWithinSchedule(officeHours, at('2025-01-06T13:59:59Z'))).toBe(false) // 08:59:59 local
    expect(isWithinSchedule(officeHours, at('2025-01-06T14:00:00Z'))).toBe(true) // 09:00
    expect(isWithinSchedule(officeHours, at('2025-01-06T21:59:59Z'))).toBe(true) // 16:59:59
    expect(isWithinSchedule(officeHours, at('2025-01-06T22:00:00Z'))).toBe(false) // 17:00
    expect(isWithinSchedule(officeHours, at('2025-01-07T16:30:00Z'))).toBe(true) // Tue 11:30
    expect(isWithinSchedule(officeHours, at('2025-01-07T17:00:00Z'))).toBe(false) // Tue 12:00
    expect(isWithinSchedule(officeHours, at('2025-01-08T15:00:00Z'))).toBe(false) // Wed 10:00
  })

  test('day_of_week is 0 = Monday … 6 = Sunday, judged in the zone (not UTC)', () => {
    const sundayMorning = schedule('Asia/Kolkata', [slot(SUN, '08:00', '10:00')])
    // 2025-01-05 is a Sunday; 08:30 IST is 03:00 UTC on the same day.
    expect(isWithinSchedule(sundayMorning, at('2025-01-05T03:00:00Z'))).toBe(true)
    // Sunday 08:30 in UTC is Sunday 14:00 in Kolkata.
    expect(isWithinSchedule(sundayMorning, at('2025-01-05T08:30:00Z'))).toBe(false)
    // Saturday 23:00 UTC is already Sunday 04:30 in Kolkata, outside the slot.
    const lateSaturdayUtc = schedule('Asia/Kolkata', [slot(SUN, '04:00', '05:00')])
    expect(isWithinSchedule(lateSaturdayUtc, at('2025-01-04T23:00:00Z'))).toBe(true)
    expect(isWithinSchedule(schedule('UTC', [slot(SAT, '23:00', '24:00')]), at('2025-01-04T23:00:00Z'))).toBe(true)
  })

  test("end_time 24:00 includes the day's last minute and nothing of the next day", () => {
    const evenings = schedule('UTC', [slot(MON, '20:00', '24:00')])
    expect(isWithinSchedule(evenings, at('2025-01-06T23:59:59Z'))).toBe(true)
    expect(isWithinSchedule(evenings, at('2025-01-07T00:00:00Z'))).toBe(false)
  })

  test('both passes through a repeated hour count (clocks going back)', () => {
    // 2025-11-02 01:00–02:00 happens twice in New York: EDT (05:xxZ) then EST (06:xxZ).
    const earlySunday = schedule('America/New_York', [slot(SUN, '01:00', '02:00')])
    expect(isWithinSchedule(earlySunday, at('2025-11-02T05:30:00Z'))).toBe(true)
    expect(isWithinSchedule(earlySunday, at('2025-11-02T06:30:00Z'))).toBe(true)
    expect(isWithinSchedule(earlySunday, at('2025-11-02T07:30:00Z'))).toBe(false)
  })

  test('an enabled schedule with an unknown zone or no slots allows nothing', () => {
    expect(isWithinSchedule(schedule('Nope/Zone', [slot(MON, '00:00', '24:00')]), at('2025-01-06T12:00:00Z'))).toBe(
      false,
    )
    expect(isWithinSchedule(schedule('UTC', []), at('2025-01-06T12:00:00Z'))).toBe(false)
  })
})

describe('nextWindowStart', () => {
  test('is the instant itself inside a window or without restrictions', () => {
    const inside = at('2025-01-06T15:12:34.567Z')
    expect(nextWindowStart(officeHours, inside)).toEqual(inside)
    expect(nextWindowStart(null, inside)).toEqual(inside)
    expect(nextWindowStart({ ...officeHours, enabled: false }, inside)).toEqual(inside)
  })

  test('finds the next opening on the same day, the next day and next week', () => {
    expect(nextWindowStart(officeHours, at('2025-01-06T13:30:00Z'))).toEqual(at('2025-01-06T14:00:00Z'))
    expect(nextWindowStart(officeHours, at('2025-01-06T13:59:30.5Z'))).toEqual(at('2025-01-06T14:00:00Z'))
    expect(nextWindowStart(officeHours, at('2025-01-06T22:00:00Z'))).toEqual(at('2025-01-07T14:00:00Z'))
    expect(nextWindowStart(officeHours, at('2025-01-07T17:00:00Z'))).toEqual(at('2025-01-13T14:00:00Z'))
    const oneMinuteAWeek = schedule('UTC', [slot(MON, '09:00', '09:01')])
    expect(nextWindowStart(oneMinuteAWeek, at('2025-01-06T09:01:00Z'))).toEqual(at('2025-01-13T09:00:00Z'))
  })

  test('is null when nothing can ever open', () => {
    expect(nextWindowStart(schedule('Nope/Zone', [slot(MON, '09:00', '17:00')]), at('2025-01-06T00:00:00Z'))).toBeNull()
    expect(nextWindowStart(schedule('UTC', []), at('2025-01-06T00:00:00Z'))).toBeNull()
  })

  describe('across daylight-saving changes in New York (2025-03-09 02:00 → 03:00, 2025-11-02 02:00 → 01:00)', () => {
    const saturdayNoon = at('2025-03-08T17:00:00Z')

    test('a slot after the change opens at the right instant, not an hour late', () => {
      expect(nextWindowStart(schedule('America/New_York', [slot(SUN, '03:00', '04:00')]), saturdayNoon)).toEqual(
        at('2025-03-09T07:00:00Z'),
      )
      expect(nextWindowStart(schedule('America/New_York', [slot(SUN, '09:00', '10:00')]), saturdayNoon)).toEqual(
        at('2025-03-09T13:00:00Z'),
      )
    })

    test('a slot starting in the skipped hour opens when the clock lands in it', () => {
      expect(nextWindowStart(schedule('America/New_York', [slot(SUN, '02:00', '04:00')]), saturdayNoon)).toEqual(
        at('2025-03-09T07:00:00Z'),
      )
    })

    test('a slot wholly inside the skipped hour waits a week', () => {
      expect(nextWindowStart(schedule('America/New_York', [slot(SUN, '02:00', '02:30')]), saturdayNoon)).toEqual(
        at('2025-03-16T06:00:00Z'),
      )
    })

    test('clocks going back: the first pass through a repeated hour opens it', () => {
      const saturdayBeforeFallBack = at('2025-11-01T16:00:00Z')
      expect(
        nextWindowStart(schedule('America/New_York', [slot(SUN, '01:30', '02:00')]), saturdayBeforeFallBack),
      ).toEqual(at('2025-11-02T05:30:00Z'))
      expect(
        nextWindowStart(schedule('America/New_York', [slot(SUN, '09:00', '10:00')]), saturdayBeforeFallBack),
      ).toEqual(at('2025-11-02T14:00:00Z'))
    })

    test('clocks going back: a window that closed reopens on the second pass through the hour', () => {
      // 01:30 EDT, after the slot; the clock goes back at 02:00 EDT and reaches 01:00 EST at 06:00Z.
      expect(
        nextWindowStart(
          schedule('America/New_York', [slot(SUN, '01:00', '01:20'), slot(SUN, '09:00', '10:00')]),
          at('2025-11-02T05:30:00Z'),
        ),
      ).toEqual(at('2025-11-02T06:00:00Z'))
    })
  })

  test('agrees with a minute-by-minute search around DST changes in several zones', () => {
    const transitions: [string, string][] = [
      ['America/New_York', '2025-03-09T07:00:00Z'],
      ['America/New_York', '2025-11-02T06:00:00Z'],
      ['Europe/London', '2025-03-30T01:00:00Z'],
      ['Europe/London', '2025-10-26T01:00:00Z'],
      ['Australia/Lord_Howe', '2025-04-05T15:00:00Z'], // a 30-minute change
    ]
    const slotSets = [
      [
        slot(SAT, '22:00', '23:00'),
        slot(SUN, '00:30', '00:40'),
        slot(SUN, '01:45', '02:15'),
        slot(SUN, '02:30', '02:45'),
        slot(SUN, '03:30', '04:00'),
        slot(SUN, '07:00', '07:05'),
      ],
      [
        slot(SUN, '01:00', '01:20'),
        slot(SUN, '03:30', '04:00'),
        slot(SAT, '12:00', '12:05'),
        slot(SUN, '12:00', '12:05'),
      ],
    ]
    let checked = 0
    for (const slots of slotSets) {
      for (const [zone, transition] of transitions) {
        const config = schedule(zone, slots)
        for (let offsetMinutes = -6 * 60; offsetMinutes <= 4 * 60; offsetMinutes += 23) {
          const start = new Date(Date.parse(transition) + offsetMinutes * 60_000 + 12_345)
          const found = nextWindowStart(config, start)!
          let expected = Math.ceil(start.getTime() / 60_000) * 60_000
          if (isWithinSchedule(config, start)) expected = start.getTime()
          else while (!isWithinSchedule(config, new Date(expected))) expected += 60_000
          expect([zone, start.toISOString(), found.toISOString()]).toEqual([
            zone,
            start.toISOString(),
            new Date(expected).toISOString(),
          ])
          checked++
        }
      }
    }
    expect(checked).toBeGreaterThan(200)
  })
})

test('isValidTimeZone accepts IANA names and refuses the rest', () => {
  for (const zone of ['UTC', 'America/New_York', 'Asia/Kolkata', 'Europe/London', 'Australia/Lord_Howe']) {
    expect(isValidTimeZone(zone)).toBe(true)
  }
  for (const zone of ['Nope/Zone', '', '+05:30', '-03:00', 'Mars/Olympus_Mons'])
    expect(isValidTimeZone(zone)).toBe(false)
})

describe('validateSlots', () => {
  test('valid slots have no problems', () => {
    expect(
      validateSlots([slot(MON, '09:00', '17:00'), slot(SUN, '00:00', '24:00'), slot(TUE, '23:58', '23:59')]),
    ).toEqual([])
  })

  test('1 to 50 slots', () => {
    expect(validateSlots([])).toEqual([{ path: ['slots'], message: 'slots must have 1 to 50 entries, got 0' }])
    expect(validateSlots(Array.from({ length: 51 }, () => slot(MON, '09:00', '10:00')))).toEqual([
      { path: ['slots'], message: 'slots must have 1 to 50 entries, got 51' },
    ])
    expect(validateSlots(Array.from({ length: 50 }, () => slot(MON, '09:00', '10:00')))).toEqual([])
  })

  test('day_of_week 0..6', () => {
    expect(validateSlots([slot(7, '09:00', '10:00')])).toEqual([
      { path: ['slots', 0, 'day_of_week'], message: 'day_of_week must be 0 (Monday) to 6 (Sunday), got 7' },
    ])
    expect(validateSlots([slot(-1, '09:00', '10:00')])).toHaveLength(1)
    expect(validateSlots([slot(1.5, '09:00', '10:00')])).toHaveLength(1)
  })

  test('times are real HH:MM; only end_time may be 24:00', () => {
    expect(validateSlots([slot(MON, '25:99', '26:00')])).toEqual([
      { path: ['slots', 0, 'start_time'], message: "start_time must be HH:MM from 00:00 to 23:59, got '25:99'" },
      { path: ['slots', 0, 'end_time'], message: "end_time must be HH:MM from 00:01 to 24:00, got '26:00'" },
    ])
    expect(validateSlots([slot(MON, '9:00', '10:00')])).toHaveLength(1)
    expect(validateSlots([slot(MON, '09:60', '10:00')])).toHaveLength(1)
    expect(validateSlots([slot(MON, '24:00', '24:00')])).toEqual([
      { path: ['slots', 0, 'start_time'], message: "start_time must be HH:MM from 00:00 to 23:59, got '24:00'" },
    ])
    expect(validateSlots([slot(MON, '09:00', '24:01')])).toHaveLength(1)
  })

  test('start before end: no empty or overnight slots', () => {
    expect(validateSlots([slot(MON, '10:00', '10:00')])).toEqual([
      { path: ['slots', 0], message: 'start_time must be before end_time' },
    ])
    expect(validateSlots([slot(MON, '09:00', '10:00'), slot(MON, '22:00', '06:00')])).toEqual([
      { path: ['slots', 1], message: 'start_time must be before end_time' },
    ])
  })
})
