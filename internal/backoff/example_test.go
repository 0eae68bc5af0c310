package backoff_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/schedd/schedd/internal/backoff"
)

func ExamplePolicy_Delay() {
	p := backoff.Policy{Initial: time.Second, Max: time.Minute, Factor: 2, Jitter: 0.2}
	var delays []time.Duration
	for attempt := range 8 {
		delays = append(delays, p.Delay(attempt, 0))
	}
	fmt.Println(delays)
	// rnd picks the jitter: 0.5 adds half of the 20%.
	fmt.Println(p.Delay(3, 0.5))
	// Output:
	// [1s 1s 2s 4s 8s 16s 32s 1m0s]
	// 4.4s
}

func ExampleSchedule_At() {
	s := backoff.DeliverySchedule()
	var delays []time.Duration
	for n := range 6 {
		delays = append(delays, s.At(n))
	}
	fmt.Println(delays)
	// Downward jitter keeps the table value as the upper bound.
	fmt.Println(s.Jittered(2, 0.2, 0), s.Jittered(2, 0.2, 0.5))
	// Output:
	// [0s 5s 25s 2m0s 10m0s 10m0s]
	// 25s 22.5s
}

func ExampleRetry() {
	errTemporary := errors.New("temporary")
	cfg := backoff.RetryConfig{
		Attempts: 5,
		MinDelay: time.Millisecond,
		MaxDelay: 10 * time.Millisecond,
		OnRetry: func(info backoff.RetryInfo) {
			fmt.Printf("attempt %d/%d failed (%v), next in %v\n", info.Attempt, info.MaxAttempts, info.Err, info.Delay)
		},
	}
	v, err := backoff.Retry(context.Background(), func(ctx context.Context, attempt int) (string, error) {
		if attempt < 3 {
			return "", errTemporary
		}
		return "sent", nil
	}, cfg)
	fmt.Println(v, err)
	// Output:
	// attempt 1/5 failed (temporary), next in 1ms
	// attempt 2/5 failed (temporary), next in 2ms
	// sent <nil>
}

func ExampleResolveRetryConfig() {
	c := backoff.ResolveRetryConfig(backoff.DefaultRetryConfig(), backoff.RetryOverrides{
		Attempts:   new(2.6),
		MinDelayMs: new(10.4),
		MaxDelayMs: new(99.8),
		Jitter:     new(0.4),
	})
	fmt.Println(c.Attempts, c.MinDelay, c.MaxDelay, c.Jitter)
	// Output:
	// 3 10ms 100ms 0.4
}
