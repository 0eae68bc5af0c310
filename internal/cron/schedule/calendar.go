package schedule

// Civil-calendar arithmetic on the proleptic Gregorian calendar, in whole
// days since 1970-01-01 (the algorithms of H. Hinnant's "chrono-compatible
// low-level date algorithms"). The search loop runs on naive wall times, so
// it needs dates without a zone, and these are cheaper than time.Date.

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// daysFrom returns the days since 1970-01-01 of the date y-m-d.
func daysFrom(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(int64(y), 400)
	yoe := int64(y) - era*400
	mp := int64(m+9) % 12
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civil returns the date of the day z since 1970-01-01.
func civil(z int64) (y, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int(mp+2)%12 + 1
	y = int(yoe + era*400)
	if m <= 2 {
		y++
	}
	return y, m, d
}

// weekday of the day z since 1970-01-01 (a Thursday), Sunday 0.
func weekday(z int64) int { return int((z%7 + 7 + 4) % 7) }

var monthDays = [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func daysIn(y, m int) int {
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		return 29
	}
	return monthDays[m]
}

// wallOf returns a naive wall time in seconds since 1970-01-01 00:00.
func wallOf(y, mo, d, h, mi, s int) int64 {
	return daysFrom(y, mo, d)*86400 + int64(h*3600+mi*60+s)
}
