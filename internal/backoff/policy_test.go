package backoff

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestPolicyDelay(t *testing.T) {
	exp := Policy{Initial: time.Second, Max: time.Minute, Factor: 2}
	// WhatsApp/Slack reconnect policy from upstream.
	reconnect := Policy{Initial: 2 * time.Second, Max: 30 * time.Second, Factor: 1.8, Jitter: 0.25}
	tests := []struct {
		name    string
		p       Policy
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{"attempt 0 is attempt 1", exp, 0, 0, time.Second},
		{"attempt 1", exp, 1, 0, time.Second},
		{"attempt 2", exp, 2, 0, 2 * time.Second},
		{"attempt 6", exp, 6, 0, 32 * time.Second},
		{"attempt 7 capped", exp, 7, 0, time.Minute},
		{"negative attempt", exp, -5, 0, time.Second},
		{"attempt 1e6 capped", exp, 1_000_000, 0.99, time.Minute},
		{"attempt MaxInt capped", exp, math.MaxInt, 0.5, time.Minute},
		{"reconnect attempt 3", reconnect, 3, 0, 6480 * time.Millisecond},
		{"reconnect attempt 3 half jitter", reconnect, 3, 0.5, 7290 * time.Millisecond},
		{"reconnect attempt 5", reconnect, 5, 0, 20995200 * time.Microsecond},
		{"reconnect jitter hits cap", reconnect, 5, 0.99, 26191512 * time.Microsecond},
		{"reconnect attempt 6 capped", reconnect, 6, 0, 30 * time.Second},
		{"factor 1 is constant", Policy{Initial: time.Second, Max: time.Hour, Factor: 1}, 1000, 0, time.Second},
		{"zero policy", Policy{}, 3, 0.5, 0},
		{"max zero", Policy{Initial: time.Second, Factor: 2}, 3, 0, 0},
		{"max negative", Policy{Initial: time.Second, Max: -time.Second, Factor: 2}, 3, 0, 0},
		{"initial above max", Policy{Initial: time.Hour, Max: time.Minute, Factor: 2}, 1, 0, time.Minute},
		{"initial negative", Policy{Initial: -time.Second, Max: time.Minute, Factor: 2}, 3, 0.5, 0},
		{"factor NaN is 1", Policy{Initial: time.Second, Max: time.Minute, Factor: math.NaN()}, 5, 0, time.Second},
		{"factor below 1 is 1", Policy{Initial: time.Second, Max: time.Minute, Factor: 0.5}, 5, 0, time.Second},
		{"factor +Inf attempt 1", Policy{Initial: time.Second, Max: time.Minute, Factor: math.Inf(1)}, 1, 0, time.Second},
		{"factor +Inf attempt 2", Policy{Initial: time.Second, Max: time.Minute, Factor: math.Inf(1)}, 2, 0, time.Minute},
		{"jitter NaN is 0", Policy{Initial: time.Second, Max: time.Minute, Factor: 2, Jitter: math.NaN()}, 1, 0.9, time.Second},
		{"jitter above 1 is 1", Policy{Initial: time.Second, Max: time.Minute, Factor: 2, Jitter: 7}, 1, 0.5, 1500 * time.Millisecond},
		{"rnd NaN is 0", Policy{Initial: time.Second, Max: time.Minute, Factor: 2, Jitter: 0.5}, 1, math.NaN(), time.Second},
		{"rnd above 1 is 1", Policy{Initial: time.Second, Max: time.Minute, Factor: 2, Jitter: 0.5}, 1, 3, 1500 * time.Millisecond},
		{"largest max", Policy{Initial: 1, Max: math.MaxInt64, Factor: 2}, 63, 0, 1 << 62},
		{"largest max overflow", Policy{Initial: 1, Max: math.MaxInt64, Factor: 2}, 64, 0, math.MaxInt64},
		{"largest max with jitter", Policy{Initial: 1 << 62, Max: math.MaxInt64, Factor: 1, Jitter: 1}, 1, 0.999999, 9223367425168756736}, // 2^62·1.999999 in float64
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.attempt, tt.rnd); got != tt.want {
				t.Errorf("%+v.Delay(%d, %v) = %v (%d), want %v", tt.p, tt.attempt, tt.rnd, got, int64(got), tt.want)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	ok := Policy{Initial: time.Second, Max: time.Minute, Factor: 2, Jitter: 0.2}
	tests := []struct {
		name   string
		edit   func(*Policy)
		fields []string // each must appear in the error; none means valid
	}{
		{"valid", func(*Policy) {}, nil},
		{"zero", func(p *Policy) { *p = Policy{Factor: 1} }, nil},
		{"constant", func(p *Policy) { p.Factor, p.Max = 1, p.Initial }, nil},
		{"jitter 1", func(p *Policy) { p.Jitter = 1 }, nil},
		{"negative initial", func(p *Policy) { p.Initial = -1 }, []string{"initial"}},
		{"max below initial", func(p *Policy) { p.Max = time.Millisecond }, []string{"max"}},
		{"negative max", func(p *Policy) { p.Initial, p.Max = 0, -1 }, []string{"max"}},
		{"factor below 1", func(p *Policy) { p.Factor = 0.5 }, []string{"factor"}},
		{"factor zero", func(p *Policy) { p.Factor = 0 }, []string{"factor"}},
		{"factor NaN", func(p *Policy) { p.Factor = math.NaN() }, []string{"factor"}},
		{"factor Inf", func(p *Policy) { p.Factor = math.Inf(1) }, []string{"factor"}},
		{"jitter negative", func(p *Policy) { p.Jitter = -0.1 }, []string{"jitter"}},
		{"jitter above 1", func(p *Policy) { p.Jitter = 1.5 }, []string{"jitter"}},
		{"jitter NaN", func(p *Policy) { p.Jitter = math.NaN() }, []string{"jitter"}},
		{"all bad", func(p *Policy) { *p = Policy{Initial: -1, Max: -2, Factor: -1, Jitter: 2} },
			[]string{"initial", "max", "factor", "jitter"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok
			tt.edit(&p)
			err := p.Validate()
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", p, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error naming %v", p, tt.fields)
			}
			for _, f := range tt.fields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("Validate(%+v) = %q, want it to name %q", p, err, f)
				}
			}
		})
	}
}

// anyFloat draws ordinary, extreme and non-finite values.
var anyFloat = rapid.OneOf(
	rapid.Float64(),
	rapid.Float64Range(0, 10),
	rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, 1, -1, math.MaxFloat64}),
)

// anyAttempt draws attempts in [0, 1e6] and a few extremes.
var anyAttempt = rapid.OneOf(
	rapid.IntRange(0, 1_000_000),
	rapid.SampledFrom([]int{math.MinInt, -1, 62, 63, 64, 1 << 40, math.MaxInt}),
)

// unitRand draws a random value in [0, 1).
var unitRand = rapid.Float64Range(0, math.Nextafter(1, 0))

// P13: 0 ≤ Delay ≤ Max for every policy (valid or not), attempt and rnd.
func TestPolicyDelayCapP13(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Policy{
			Initial: time.Duration(rapid.Int64().Draw(t, "initial")),
			Max:     time.Duration(rapid.Int64().Draw(t, "max")),
			Factor:  anyFloat.Draw(t, "factor"),
			Jitter:  anyFloat.Draw(t, "jitter"),
		}
		attempt := anyAttempt.Draw(t, "attempt")
		rnd := unitRand.Draw(t, "rnd")
		if d := p.Delay(attempt, rnd); d < 0 || d > max(p.Max, 0) {
			t.Fatalf("Delay(%d, %v) = %v, want within [0, %v]", attempt, rnd, d, max(p.Max, 0))
		}
	})
}

// validPolicy draws a policy that passes Validate.
func validPolicy(t *rapid.T, jitter bool) Policy {
	p := Policy{
		Initial: time.Duration(rapid.Int64Range(0, math.MaxInt64).Draw(t, "initial")),
		Factor: rapid.OneOf(
			rapid.Float64Range(1, 4),
			rapid.Float64Range(1, 1e6),
			rapid.SampledFrom([]float64{1, math.Nextafter(1, 2), 1 + 1e-12, 1.8, 2}),
		).Draw(t, "factor"),
	}
	p.Max = time.Duration(rapid.Int64Range(int64(p.Initial), math.MaxInt64).Draw(t, "max"))
	if jitter {
		p.Jitter = rapid.Float64Range(0, 1).Draw(t, "jitter")
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("validPolicy drew an invalid policy: %v", err)
	}
	return p
}

// P14: with jitter 0, Delay(n+1) ≥ Delay(n); once it reaches Max it stays there.
func TestPolicyMonotoneP14(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t, false)
		start := anyAttempt.Draw(t, "start")
		prev := p.Delay(start, 0)
		for n := start; n < start+64 && n < math.MaxInt; n++ {
			next := p.Delay(n+1, 0)
			if next < prev {
				t.Fatalf("Delay(%d) = %v < Delay(%d) = %v", n+1, next, n, prev)
			}
			prev = next
		}
	})
}

// P13/P15: jitter only adds, by at most Jitter·base, and never passes Max.
func TestPolicyJitterBoundsP15(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t, true)
		attempt := anyAttempt.Draw(t, "attempt")
		rnd := unitRand.Draw(t, "rnd")
		lo := p.Delay(attempt, 0)
		d := p.Delay(attempt, rnd)
		// Allow a relative 1e-15 for float64 rounding of large delays.
		hi := max(min(durationOf(float64(lo)*(1+p.Jitter)*(1+1e-15)+1), p.Max), lo)
		if d < lo || d > hi {
			t.Fatalf("Delay(%d, %v) = %v, want within [%v, %v]", attempt, rnd, d, lo, hi)
		}
	})
}

// ksCritical01 is the asymptotic Kolmogorov–Smirnov critical value for
// α = 0.01: √n·D above it rejects uniformity.
const ksCritical01 = 1.628

// ksUniform returns the Kolmogorov–Smirnov statistic √n·D of samples xs
// against U(lo, hi). It sorts xs.
func ksUniform(xs []float64, lo, hi float64) float64 {
	slices.Sort(xs)
	n := float64(len(xs))
	var d float64
	for i, x := range xs {
		f := min(max((x-lo)/(hi-lo), 0), 1)
		d = max(d, float64(i+1)/n-f, f-float64(i)/n)
	}
	return math.Sqrt(n) * d
}

// sampleDurations draws n values of delay(u) with u uniform in [0, 1) from a
// fixed seed, checks each lies in [lo, hi], and returns them as float64.
func sampleDurations(t *testing.T, n int, lo, hi time.Duration, delay func(u float64) time.Duration) []float64 {
	t.Helper()
	r := rand.New(rand.NewPCG(13, 15))
	xs := make([]float64, n)
	for i := range xs {
		d := delay(r.Float64())
		if d < lo || d > hi {
			t.Fatalf("sample %v outside [%v, %v]", d, lo, hi)
		}
		xs[i] = float64(d)
	}
	return xs
}

// P15: upward jitter is uniform over [base, base·(1+Jitter)].
func TestPolicyJitterDistributionP15(t *testing.T) {
	p := Policy{Initial: 2 * time.Second, Max: time.Hour, Factor: 1.8, Jitter: 0.25}
	base := 6480 * time.Millisecond // attempt 3
	hi := 8100 * time.Millisecond
	xs := sampleDurations(t, 100_000, base, hi, func(u float64) time.Duration { return p.Delay(3, u) })
	if k := ksUniform(xs, float64(base), float64(hi)); k > ksCritical01 {
		t.Errorf("KS statistic √n·D = %.3f > %.3f: not uniform over [%v, %v]", k, ksCritical01, base, hi)
	}
}

// FuzzPolicyDelay checks Delay's invariants (P13, P14) on arbitrary input:
// within [0, max(Max, 0)], jitter never lowers a delay, and for valid
// policies the un-jittered delay never falls from one attempt to the next.
func FuzzPolicyDelay(f *testing.F) {
	f.Add(int64(time.Second), int64(time.Minute), 2.0, 0.2, 3, 0.5)
	f.Add(int64(2*time.Second), int64(30*time.Second), 1.8, 0.25, 1_000_000, 0.999)
	f.Add(int64(1), int64(math.MaxInt64), 2.0, 1.0, 64, 0.0)
	f.Add(int64(-1), int64(-1), math.NaN(), math.Inf(1), math.MaxInt, math.NaN())
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), math.Inf(1), 1.0, 2, 0.9)
	f.Fuzz(func(t *testing.T, initial, maxd int64, factor, jitter float64, attempt int, rnd float64) {
		p := Policy{Initial: time.Duration(initial), Max: time.Duration(maxd), Factor: factor, Jitter: jitter}
		d := p.Delay(attempt, rnd)
		if d < 0 || d > max(p.Max, 0) {
			t.Fatalf("%+v.Delay(%d, %v) = %v, want within [0, %v]", p, attempt, rnd, d, max(p.Max, 0))
		}
		if lo := p.Delay(attempt, 0); d < lo {
			t.Fatalf("%+v.Delay(%d, %v) = %v, below the un-jittered %v", p, attempt, rnd, d, lo)
		}
		if p.Validate() == nil && attempt < math.MaxInt {
			if a, b := p.Delay(attempt, 0), p.Delay(attempt+1, 0); b < a {
				t.Fatalf("%+v: Delay(%d) = %v < Delay(%d) = %v", p, attempt+1, b, attempt, a)
			}
		}
	})
}
