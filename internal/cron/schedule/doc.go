// Package schedule computes the run instants of schedd's cron jobs: cron
// expressions (OCPS 1.4, the syntax OpenClaw's own cron accepts), fixed
// intervals ("every") and one-shots ("at"), plus the per-job stagger.
//
// It is pure computation: no goroutines, no clock, no I/O. The time zone
// database is embedded (time/tzdata), so a job's zone resolves the same way
// on every host.
//
// # Cron syntax
//
// An expression has 5 fields (minute hour day-of-month month day-of-week), 6
// (a second field first) or 7 (second first, year last, 1970-2199), separated
// by spaces or tabs. Each field is a list of values, ranges A-B and steps
// (*/S or A-B/S; "A/S" is an error, write A-MAX/S). Months JAN-DEC and days
// SUN-SAT may be named in any case; day-of-week 0 and 7 are both Sunday.
// Day-of-month also takes L (last day), LW (last weekday), NW (the weekday
// nearest day N, within the month; no match in a month without day N) and ?
// (the same as *, as OCPS 1.4 advises; croner substitutes a value for it
// instead). Day-of-week also takes DL or D#L (the last such day of the month),
// D#N (the N-th, 1-5) and ?. L, W and # take a single day, not a range. The
// nicknames @yearly, @annually, @monthly, @weekly, @daily, @midnight and
// @hourly stand for their 5-field patterns; @reboot is rejected (a cron job
// here needs a time schedule). L, W and the nicknames are case-sensitive.
//
// When day-of-month and day-of-week are both restricted (neither is * or ?),
// a day matches when either matches, as in Vixie cron: "0 12 1 * MON" runs on
// the 1st and on every Monday. A + in front of day-of-week makes it "both":
// "0 12 1 * +MON" runs only on a 1st that is a Monday. A field written as a
// step from * ("*/2") counts as restricted, unlike Vixie cron.
//
// # Daylight-saving time
//
// A cron expression names wall-clock times in its zone. Twice a year some
// wall times do not exist (the gap when clocks spring forward) and others
// happen twice (the overlap when they fall back). Which rule applies depends
// on the hour field:
//
//   - Fixed hour: the hour field is made of numbers and ranges only ("7",
//     "1,13", "9-17"). Such a job runs at its wall times, once each. A wall
//     time in a gap runs once, shifted by the length of the gap: 02:30 becomes
//     03:30 on a day that jumps from 02:00 to 03:00, 02:15 becomes 02:45 where
//     clocks jump by 30 minutes, and a midnight that does not exist becomes
//     01:00. A wall time that happens twice runs once, at its first occurrence.
//     If a shifted time lands on another of the job's times, the job runs once
//     for both.
//   - Wildcard or step hour ("*", "*/2", "1-23/2"): such a job follows real
//     elapsed time, as ISC cron does. It runs at every instant whose wall time
//     matches, so in a repeated hour it runs in both passes ("*/15 * * * *"
//     runs 8 times between 01:00 and 02:00 on the fall-back day in New York),
//     and a wall time in a gap is not shifted: no instant has that wall time,
//     so the job runs at its next matching instant ("0 * * * *" runs at 01:00
//     and then 03:00 when clocks jump from 02:00 to 03:00, an hour apart).
//   - "every" schedules run at origin + k·interval in real time and ignore the
//     wall clock; "at" runs at its instant.
//
// In short:
//
//	schedule              wall time in a gap            wall time that happens twice
//	cron, fixed hour      once, shifted by the gap      once, at the first
//	cron, * or step hour  no run (there is no instant)  at both instants
//	every, at             real time only: no wall clock
//
// [Cron.FixedHour] reports which rule a job follows. Next never returns its
// argument, so a caller that asks again from the last run never gets it
// twice, and it never drops a fixed wall time in silence.
//
// # Search horizon
//
// Next searches up to the end of 2199 (the OCPS year range). A pattern that
// matches no day in that span, such as "0 0 30 2 *", parses but has no next
// run: Next reports false.
package schedule

import _ "time/tzdata" // every job's zone resolves without the host's zoneinfo
