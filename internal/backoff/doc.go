// Package backoff computes retry delays and runs retry loops for schedd.
//
// It holds three tools, shared by the gateway crash backoff, the restart logic,
// heartbeat retries and the delivery retry table:
//
//   - [Policy]: exponential backoff, Initial·Factor^(n−1) plus upward jitter,
//     capped at Max (upstream backoff.ts).
//   - [Schedule]: a fixed table of delays whose last entry repeats, with
//     downward jitter so the table values stay upper bounds (the delivery
//     table is [DeliverySchedule]).
//   - [Retry]: calls a function until it succeeds, runs out of attempts, is
//     told to stop, or its context ends (upstream retry.ts, with
//     [ResolveRetryConfig] reproducing upstream's clamps).
//
// All delay arithmetic saturates: no input, however large or non-finite,
// yields a negative delay, an overflow, or a delay above the configured cap.
// Random values are passed in (Policy and Schedule take a number in [0, 1);
// Retry takes a [RetryConfig].Rand function), so tests can be exact.
//
// A typical crash backoff:
//
//	p := backoff.Policy{Initial: time.Second, Max: time.Minute, Factor: 2, Jitter: 0.2}
//	if err := p.Validate(); err != nil {
//		return fmt.Errorf("gateway backoff: %w", err)
//	}
//	wait := p.Delay(failures, rand.Float64())
//	if err := backoff.Sleep(ctx, wait); err != nil {
//		return err
//	}
//
// The package starts no goroutines; [Retry] and [Sleep] block the caller.
package backoff
