// Package backoff computes retry delays for schedd, and reads the delay a destination asks
// for (an HTTP Retry-After, [ParseRetryAfter]).
//
// It holds two tools:
//
//   - [Policy]: exponential backoff, Initial·Factor^(n−1) plus upward jitter,
//     capped at Max (upstream backoff.ts); the gateway's crash restarts use it.
//   - [Schedule]: a fixed table of delays after the k-th failure in a row, whose
//     last entry repeats, with downward jitter so the table values stay upper
//     bounds; the delivery retries use it.
//
// All delay arithmetic saturates: no input, however large or non-finite,
// yields a negative delay, an overflow, or a delay above the configured cap.
// Random values are passed in (a number in [0, 1)), so tests can be exact.
//
// A typical crash backoff:
//
//	p := backoff.Policy{Initial: time.Second, Max: time.Minute, Factor: 2, Jitter: 0.2}
//	if err := p.Validate(); err != nil {
//		return fmt.Errorf("gateway backoff: %w", err)
//	}
//	wait := p.Delay(failures, rand.Float64())
//
// The package starts no goroutines and never sleeps.
package backoff
