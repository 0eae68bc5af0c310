package backoff_test

import (
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

func ExampleSchedule_After() {
	s := backoff.Schedule{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}
	var delays []time.Duration
	for failures := range 8 {
		delays = append(delays, s.After(failures))
	}
	fmt.Println(delays)
	// Downward jitter keeps the table value as the upper bound.
	fmt.Println(s.Jittered(2, 0.2, 0), s.Jittered(2, 0.2, 0.5))
	// Output:
	// [0s 30s 1m0s 5m0s 15m0s 1h0m0s 1h0m0s 1h0m0s]
	// 1m0s 54s
}
