package backoff

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"
)

func TestResolveRetryConfig(t *testing.T) {
	def := DefaultRetryConfig()
	tests := []struct {
		name     string
		defaults RetryConfig
		o        RetryOverrides
		want     RetryConfig // Attempts, MinDelay, MaxDelay, Jitter
	}{
		// The three upstream examples.
		{"upstream rounds", def,
			RetryOverrides{Attempts: new(2.6), MinDelayMs: new(10.4), MaxDelayMs: new(99.8), Jitter: new(0.4)},
			RetryConfig{Attempts: 3, MinDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond, Jitter: 0.4}},
		{"upstream clamps", def,
			RetryOverrides{Attempts: new(0.0), MinDelayMs: new(250.0), MaxDelayMs: new(100.0), Jitter: new(-1.0)},
			RetryConfig{Attempts: 1, MinDelay: 250 * time.Millisecond, MaxDelay: 250 * time.Millisecond, Jitter: 0}},
		{"upstream non-finite", def,
			RetryOverrides{Attempts: new(math.NaN()), MinDelayMs: new(math.Inf(1)), MaxDelayMs: new(math.NaN()), Jitter: new(2.0)},
			RetryConfig{Attempts: 3, MinDelay: 300 * time.Millisecond, MaxDelay: 30 * time.Second, Jitter: 1}},

		{"nil keeps defaults", def, RetryOverrides{}, def},
		{"-Inf keeps defaults", def,
			RetryOverrides{Attempts: new(math.Inf(-1)), MinDelayMs: new(math.Inf(-1)), MaxDelayMs: new(math.Inf(-1)), Jitter: new(math.Inf(-1))},
			def},
		{"negative values", def,
			RetryOverrides{Attempts: new(-4.0), MinDelayMs: new(-10.0), MaxDelayMs: new(-10.0)},
			RetryConfig{Attempts: 1, MinDelay: 0, MaxDelay: 0}},
		{"half rounds up", def,
			RetryOverrides{Attempts: new(0.5), MinDelayMs: new(0.5)},
			RetryConfig{Attempts: 1, MinDelay: time.Millisecond, MaxDelay: 30 * time.Second}},
		{"huge values saturate", def,
			RetryOverrides{Attempts: new(1e300), MinDelayMs: new(1e300), MaxDelayMs: new(1e300)},
			RetryConfig{Attempts: math.MaxInt, MinDelay: math.MaxInt64, MaxDelay: math.MaxInt64}},
		{"max raised to min", def, RetryOverrides{MinDelayMs: new(60_000.0)},
			RetryConfig{Attempts: 3, MinDelay: time.Minute, MaxDelay: time.Minute}},
		{"defaults are clamped too", RetryConfig{Attempts: 0, MinDelay: -time.Second, MaxDelay: -time.Second, Jitter: math.NaN()},
			RetryOverrides{}, RetryConfig{Attempts: 1}},
		{"no-cap default becomes min", RetryConfig{Attempts: 3, MinDelay: time.Second}, RetryOverrides{},
			RetryConfig{Attempts: 3, MinDelay: time.Second, MaxDelay: time.Second}},
		{"default jitter clamped", RetryConfig{Attempts: 3, Jitter: 4}, RetryOverrides{},
			RetryConfig{Attempts: 3, Jitter: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResolveRetryConfig(tt.defaults, tt.o)
			if got.Attempts != tt.want.Attempts || got.MinDelay != tt.want.MinDelay ||
				got.MaxDelay != tt.want.MaxDelay || got.Jitter != tt.want.Jitter {
				t.Errorf("ResolveRetryConfig = {%d %v %v %v}, want {%d %v %v %v}",
					got.Attempts, got.MinDelay, got.MaxDelay, got.Jitter,
					tt.want.Attempts, tt.want.MinDelay, tt.want.MaxDelay, tt.want.Jitter)
			}
		})
	}
}

func TestResolveRetryConfigKeepsCallbacks(t *testing.T) {
	def := DefaultRetryConfig()
	def.Label = "send"
	def.ShouldRetry = func(error, int) bool { return false }
	got := ResolveRetryConfig(def, RetryOverrides{Attempts: new(5.0)})
	if got.Label != "send" || got.ShouldRetry == nil || got.Attempts != 5 {
		t.Fatalf("ResolveRetryConfig dropped fields: %+v", got)
	}
}

func TestRetryDelay(t *testing.T) {
	def := DefaultRetryConfig()
	noCap := RetryConfig{Attempts: 3, MinDelay: 300 * time.Millisecond}
	jit := RetryConfig{Attempts: 3, MinDelay: time.Second, MaxDelay: 10 * time.Second, Jitter: 0.1}
	tests := []struct {
		name    string
		c       RetryConfig
		attempt int
		hint    time.Duration
		hasHint bool
		rnd     float64
		want    time.Duration
	}{
		{"attempt 1", def, 1, 0, false, 0, 300 * time.Millisecond},
		{"attempt 2", def, 2, 0, false, 0, 600 * time.Millisecond},
		{"attempt 7", def, 7, 0, false, 0, 19200 * time.Millisecond},
		{"attempt 8 capped", def, 8, 0, false, 0, 30 * time.Second},
		{"attempt 1e6 capped", def, 1_000_000, 0, false, 0, 30 * time.Second},
		{"attempt MaxInt capped", def, math.MaxInt, 0, false, 0, 30 * time.Second},
		{"attempt 0 as 1", def, 0, 0, false, 0, 300 * time.Millisecond},
		{"hint above max is clamped", def, 1, 10 * time.Minute, true, 0, 30 * time.Second},
		{"hint below min is raised", def, 3, 50 * time.Millisecond, true, 0, 300 * time.Millisecond},
		{"hint replaces doubling", def, 5, 2 * time.Second, true, 0, 2 * time.Second},
		{"negative hint is min", def, 5, -time.Hour, true, 0, 300 * time.Millisecond},
		{"no cap", noCap, 11, 0, false, 0, 307200 * time.Millisecond},
		{"no cap saturates", noCap, 1_000_000, 0, false, 0, math.MaxInt64},
		{"no cap keeps hint", noCap, 1, 10 * time.Hour, true, 0, 10 * time.Hour},
		{"zero min retries at once", RetryConfig{MaxDelay: time.Second}, 9, 0, false, 0, 0},
		{"zero min and huge attempt", RetryConfig{}, math.MaxInt, 0, false, 0, 0},
		{"negative min is 0", RetryConfig{MinDelay: -time.Second, MaxDelay: time.Second}, 3, 0, false, 0, 0},
		{"min above max: max wins", RetryConfig{MinDelay: time.Minute, MaxDelay: time.Second}, 1, 0, false, 0, time.Second},
		{"jitter low end", jit, 2, 0, false, 0, 1800 * time.Millisecond},
		{"jitter middle", jit, 2, 0, false, 0.5, 2 * time.Second},
		{"jitter high end", jit, 2, 0, false, 0.75, 2100 * time.Millisecond},
		{"jitter below min is raised", jit, 1, 0, false, 0, time.Second},
		{"jitter above max is clamped", jit, 5, 0, false, 0.99, 10 * time.Second},
		{"jitter NaN rnd is 0", jit, 2, 0, false, math.NaN(), 1800 * time.Millisecond},
		{"jitter 1 may reach 0", RetryConfig{MinDelay: 0, MaxDelay: time.Second, Jitter: 1}, 1, time.Second, true, 0, 0},
		{"jitter on saturated base", RetryConfig{MinDelay: time.Second, Jitter: 1}, 1_000_000, 0, false, 0, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.delay(tt.attempt, tt.hint, tt.hasHint, tt.rnd); got != tt.want {
				t.Errorf("delay(%d, %v, %v, %v) = %v, want %v", tt.attempt, tt.hint, tt.hasHint, tt.rnd, got, tt.want)
			}
		})
	}
}

// P15: symmetric jitter ±r stays within [d(1−r), d(1+r)] and is uniform there;
// near MinDelay the clamp keeps it at or above MinDelay.
func TestRetryJitterDistributionP15(t *testing.T) {
	c := RetryConfig{Attempts: 10, MinDelay: 300 * time.Millisecond, MaxDelay: 30 * time.Second, Jitter: 0.2}
	d := 1200 * time.Millisecond // attempt 3
	lo, hi := d*8/10, d*12/10
	xs := sampleDurations(t, 100_000, lo, hi, func(u float64) time.Duration { return c.delay(3, 0, false, u) })
	if k := ksUniform(xs, float64(lo), float64(hi)); k > ksCritical01 {
		t.Errorf("KS statistic √n·D = %.3f > %.3f: not uniform over [%v, %v]", k, ksCritical01, lo, hi)
	}
	sampleDurations(t, 10_000, c.MinDelay, c.MinDelay*12/10, func(u float64) time.Duration { return c.delay(1, 0, false, u) })
	sampleDurations(t, 10_000, c.MaxDelay*8/10, c.MaxDelay, func(u float64) time.Duration { return c.delay(20, 0, false, u) })
}

var errBoom = errors.New("boom")

// run records one Retry run: the virtual time of each call, the infos given
// to OnRetry, and the result.
type run struct {
	calls   []time.Duration // since the start
	retries []RetryInfo
	val     int
	err     error
	elapsed time.Duration
}

// runRetry runs Retry inside the caller's synctest bubble. fn fails with
// errs[attempt−1] (errBoom past the end) and returns attempt on success.
func runRetry(ctx context.Context, cfg RetryConfig, errs func(attempt int) error) run {
	var r run
	start := time.Now()
	cfg.OnRetry = func(info RetryInfo) { r.retries = append(r.retries, info) }
	r.val, r.err = Retry(ctx, func(ctx context.Context, attempt int) (int, error) {
		r.calls = append(r.calls, time.Since(start))
		if err := errs(attempt); err != nil {
			return 0, err
		}
		return attempt, nil
	}, cfg)
	r.elapsed = time.Since(start)
	return r
}

func alwaysFail(int) error { return errBoom }

// P16: upstream parity with jitter 0. Every case runs in a synctest bubble,
// so the calls happen at exact virtual times.
func TestRetryParityP16(t *testing.T) {
	def := DefaultRetryConfig()
	permanent := errors.New("permanent")
	tests := []struct {
		name      string
		cfg       RetryConfig
		errs      func(attempt int) error
		wantCalls []time.Duration
		wantErr   error // nil: success with value len(wantCalls)
	}{
		{"defaults fail 3 times", def, alwaysFail,
			[]time.Duration{0, 300 * time.Millisecond, 900 * time.Millisecond}, errBoom},
		{"success on attempt 2", def, func(a int) error {
			if a < 2 {
				return errBoom
			}
			return nil
		}, []time.Duration{0, 300 * time.Millisecond}, nil},
		{"first call succeeds", def, func(int) error { return nil }, []time.Duration{0}, nil},
		{"ShouldRetry false stops at once",
			RetryConfig{Attempts: 5, MinDelay: time.Second, ShouldRetry: func(error, int) bool { return false }},
			alwaysFail, []time.Duration{0}, errBoom},
		{"permanent error on attempt 2",
			RetryConfig{Attempts: 5, MinDelay: time.Second, MaxDelay: time.Minute,
				ShouldRetry: func(err error, _ int) bool { return !errors.Is(err, permanent) }},
			func(a int) error {
				if a == 2 {
					return permanent
				}
				return errBoom
			}, []time.Duration{0, time.Second}, permanent},
		{"Retry-After clamped to MaxDelay",
			RetryConfig{Attempts: 3, MinDelay: time.Second, MaxDelay: 30 * time.Second,
				RetryAfter: func(error) (time.Duration, bool) { return 10 * time.Minute, true }},
			alwaysFail, []time.Duration{0, 30 * time.Second, time.Minute}, errBoom},
		{"Retry-After raised to MinDelay",
			RetryConfig{Attempts: 2, MinDelay: 2 * time.Second, MaxDelay: time.Minute,
				RetryAfter: func(error) (time.Duration, bool) { return time.Second, true }},
			alwaysFail, []time.Duration{0, 2 * time.Second}, errBoom},
		{"no Retry-After hint doubles",
			RetryConfig{Attempts: 3, MinDelay: time.Second, MaxDelay: time.Minute,
				RetryAfter: func(error) (time.Duration, bool) { return time.Hour, false }},
			alwaysFail, []time.Duration{0, time.Second, 3 * time.Second}, errBoom},
		{"attempts 0 means 1", RetryConfig{MinDelay: time.Second}, alwaysFail, []time.Duration{0}, errBoom},
		{"zero delay retries at once", RetryConfig{Attempts: 4}, alwaysFail, []time.Duration{0, 0, 0, 0}, errBoom},
		{"simple form: no cap", RetryConfig{Attempts: 5, MinDelay: 300 * time.Millisecond}, alwaysFail,
			[]time.Duration{0, 300 * time.Millisecond, 900 * time.Millisecond, 2100 * time.Millisecond, 4500 * time.Millisecond}, errBoom},
		{"10 attempts doubling from 1s capped 30s",
			RetryConfig{Attempts: 10, MinDelay: time.Second, MaxDelay: 30 * time.Second}, alwaysFail,
			[]time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 31 * time.Second,
				61 * time.Second, 91 * time.Second, 121 * time.Second, 151 * time.Second}, errBoom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tt.cfg
				cfg.Label = "parity"
				var asked []int
				if should := cfg.ShouldRetry; should != nil {
					cfg.ShouldRetry = func(err error, attempt int) bool {
						asked = append(asked, attempt)
						return should(err, attempt)
					}
				}
				r := runRetry(t.Context(), cfg, tt.errs)

				if fmt.Sprint(r.calls) != fmt.Sprint(tt.wantCalls) {
					t.Errorf("calls at %v, want %v", r.calls, tt.wantCalls)
				}
				if want := tt.wantCalls[len(tt.wantCalls)-1]; r.elapsed != want {
					t.Errorf("elapsed %v, want %v", r.elapsed, want)
				}
				if tt.wantErr == nil {
					if r.err != nil || r.val != len(tt.wantCalls) {
						t.Errorf("Retry = (%d, %v), want (%d, nil)", r.val, r.err, len(tt.wantCalls))
					}
				} else if r.err != tt.wantErr {
					t.Errorf("Retry error = %v, want exactly %v", r.err, tt.wantErr)
				}

				// OnRetry: once per wait, with the delay actually waited.
				if len(r.retries) != len(r.calls)-1 {
					t.Fatalf("OnRetry called %d times for %d calls", len(r.retries), len(r.calls))
				}
				for i, info := range r.retries {
					wantDelay := r.calls[i+1] - r.calls[i]
					if info.Attempt != i+1 || info.MaxAttempts != max(cfg.Attempts, 1) ||
						info.Delay != wantDelay || info.Err == nil || info.Label != "parity" {
						t.Errorf("OnRetry #%d = %+v, want attempt %d, max %d, delay %v, an error, label parity",
							i, info, i+1, max(cfg.Attempts, 1), wantDelay)
					}
				}

				// ShouldRetry is asked after every failure but the last attempt's.
				if cfg.ShouldRetry != nil {
					for i, a := range asked {
						if a != i+1 || a >= cfg.Attempts {
							t.Errorf("ShouldRetry asked for attempts %v", asked)
							break
						}
					}
				}
			})
		})
	}
}

// upstreamDelayMs is retry.ts's delay with jitter 0, in whole milliseconds:
// base = max(hint, min) or min·2^(attempt−1); clamp(min(base, max), min, max),
// where max ≤ 0 means no cap.
func upstreamDelayMs(attempt int, minMs, maxMs, hintMs int64, hasHint bool) int64 {
	limit := int64(math.MaxInt64)
	if maxMs > 0 {
		limit = maxMs
	}
	base := minMs << (attempt - 1)
	if hasHint {
		base = max(hintMs, minMs)
	}
	return min(max(min(base, limit), minMs), limit)
}

// P16 as a property: call count ≤ attempts, attempts−1 OnRetry calls when
// every call fails, and each delay equal to upstream's formula.
func TestRetryParityPropertyP16(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		attempts := rapid.IntRange(-1, 12).Draw(rt, "attempts")
		minMs := rapid.Int64Range(0, 5_000).Draw(rt, "minMs")
		maxMs := rapid.Int64Range(-1_000, 120_000).Draw(rt, "maxMs")
		hasHint := rapid.Bool().Draw(rt, "hasHint")
		hintMs := rapid.Int64Range(-1_000, 600_000).Draw(rt, "hintMs")
		cfg := RetryConfig{
			Attempts: attempts,
			MinDelay: time.Duration(minMs) * time.Millisecond,
			MaxDelay: time.Duration(maxMs) * time.Millisecond,
			RetryAfter: func(error) (time.Duration, bool) {
				return time.Duration(hintMs) * time.Millisecond, hasHint
			},
		}
		var r run
		synctest.Test(t, func(t *testing.T) { r = runRetry(t.Context(), cfg, alwaysFail) })

		want := max(attempts, 1)
		if len(r.calls) != want || len(r.retries) != want-1 {
			rt.Fatalf("%d calls and %d OnRetry calls, want %d and %d", len(r.calls), len(r.retries), want, want-1)
		}
		for i, info := range r.retries {
			wantMs := upstreamDelayMs(i+1, minMs, maxMs, hintMs, hasHint)
			if info.Delay != time.Duration(wantMs)*time.Millisecond {
				rt.Fatalf("delay after attempt %d = %v, want %dms", i+1, info.Delay, wantMs)
			}
			if got := r.calls[i+1] - r.calls[i]; got != info.Delay {
				rt.Fatalf("waited %v after attempt %d, OnRetry said %v", got, i+1, info.Delay)
			}
		}
	})
}

// P17: a context that ends during a wait stops Retry at that very instant,
// with no further attempt.
func TestRetryCancelP17(t *testing.T) {
	cfg := RetryConfig{Attempts: 5, MinDelay: time.Second, MaxDelay: time.Minute}
	t.Run("cancel during wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			time.AfterFunc(1500*time.Millisecond, cancel) // during the 2 s wait after attempt 2
			r := runRetry(ctx, cfg, alwaysFail)
			if r.elapsed != 1500*time.Millisecond || len(r.calls) != 2 || len(r.retries) != 2 {
				t.Fatalf("returned after %v with %d calls and %d retries, want 1.5s, 2 and 2",
					r.elapsed, len(r.calls), len(r.retries))
			}
			if !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, errBoom) {
				t.Fatalf("error %v, want context.Canceled wrapping %v", r.err, errBoom)
			}
			if want := "context canceled after attempt 2: boom"; r.err.Error() != want {
				t.Errorf("error text %q, want %q", r.err, want)
			}
		})
	})
	t.Run("deadline during wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
			defer cancel()
			r := runRetry(ctx, cfg, alwaysFail)
			if r.elapsed != 2500*time.Millisecond || len(r.calls) != 2 {
				t.Fatalf("returned after %v with %d calls, want 2.5s and 2", r.elapsed, len(r.calls))
			}
			if !errors.Is(r.err, context.DeadlineExceeded) || !errors.Is(r.err, errBoom) {
				t.Fatalf("error %v, want context.DeadlineExceeded wrapping %v", r.err, errBoom)
			}
		})
	})
	t.Run("already cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			r := runRetry(ctx, cfg, alwaysFail)
			if len(r.calls) != 0 || r.err != context.Canceled {
				t.Fatalf("%d calls, error %v; want 0 calls and context.Canceled", len(r.calls), r.err)
			}
		})
	})
	t.Run("cancelled by the attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := runRetry(ctx, cfg, func(int) error { cancel(); return errBoom })
			if len(r.calls) != 1 || len(r.retries) != 0 || r.elapsed != 0 {
				t.Fatalf("%d calls, %d retries, %v elapsed; want 1, 0, 0", len(r.calls), len(r.retries), r.elapsed)
			}
			if !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, errBoom) {
				t.Fatalf("error %v, want context.Canceled wrapping %v", r.err, errBoom)
			}
		})
	})
	t.Run("last attempt error is returned as is", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := runRetry(ctx, RetryConfig{Attempts: 1}, func(int) error { cancel(); return errBoom })
			if r.err != errBoom {
				t.Fatalf("error %v, want exactly %v", r.err, errBoom)
			}
		})
	})
}

func TestRetryJitterUsesRand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		cfg := RetryConfig{Attempts: 3, MinDelay: time.Second, MaxDelay: time.Minute, Jitter: 0.5,
			Rand: func() float64 { calls++; return 0 }}
		r := runRetry(t.Context(), cfg, alwaysFail)
		// f = 0 gives d·(1 − 0.5), then the MinDelay floor: 1s, then 1s.
		if calls != 2 || r.retries[0].Delay != time.Second || r.retries[1].Delay != time.Second {
			t.Fatalf("Rand called %d times, delays %v and %v; want 2, 1s, 1s",
				calls, r.retries[0].Delay, r.retries[1].Delay)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// Without Jitter, Rand is never called; without Rand, the default source is used.
		cfg := RetryConfig{Attempts: 2, MinDelay: time.Second, Rand: func() float64 { panic("called") }}
		runRetry(t.Context(), cfg, alwaysFail)
		cfg = RetryConfig{Attempts: 3, MinDelay: time.Second, MaxDelay: time.Minute, Jitter: 0.5}
		r := runRetry(t.Context(), cfg, alwaysFail)
		if d := r.retries[1].Delay; d < time.Second || d > 3*time.Second {
			t.Fatalf("delay %v outside [1s, 3s]", d)
		}
	})
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), 5*time.Second); err != nil || time.Since(start) != 5*time.Second {
			t.Fatalf("Sleep(5s) = %v after %v, want nil after 5s", err, time.Since(start))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(2*time.Second, cancel)
		start := time.Now()
		if err := Sleep(ctx, time.Hour); err != context.Canceled || time.Since(start) != 2*time.Second {
			t.Fatalf("Sleep(1h) cancelled at 2s = %v after %v, want context.Canceled after 2s", err, time.Since(start))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for _, d := range []time.Duration{0, -time.Second} {
			if err := Sleep(ctx, d); err != nil {
				t.Errorf("Sleep(%v) on a cancelled context = %v, want nil", d, err)
			}
		}
		start := time.Now()
		if err := Sleep(ctx, time.Second); err != context.Canceled || time.Since(start) != 0 {
			t.Errorf("Sleep(1s) on a cancelled context = %v after %v, want context.Canceled at once", err, time.Since(start))
		}
	})
}
