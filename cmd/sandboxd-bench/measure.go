package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// latency is a set of timings.
type latency struct {
	N   int     `json:"-"`
	P50 float64 `json:"p50"` // milliseconds
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// times runs op n times and returns its timings; between runs off the
// clock after each op (cleanup, waiting for a pool to refill).
func times(ctx context.Context, n int, op func(context.Context) error, between func(context.Context) error) (latency, error) {
	d := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := op(ctx); err != nil {
			return latency{}, err
		}
		d = append(d, time.Since(start))
		if between != nil {
			if err := between(ctx); err != nil {
				return latency{}, err
			}
		}
	}
	return percentiles(d), nil
}

func percentiles(d []time.Duration) latency {
	slices.Sort(d)
	pct := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000 }
	return latency{N: len(d), P50: pct(0.50), P90: pct(0.90), P99: pct(0.99)}
}

// rate runs op from clients goroutines for dur and returns completed ops
// per second. The first error stops every client.
func rate(ctx context.Context, clients int, dur time.Duration, op func(context.Context) error) (float64, int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var done atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(dur)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) && ctx.Err() == nil {
				if err := op(ctx); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return 0, 0, fmt.Errorf("%d clients: %w", clients, first)
	}
	n := done.Load()
	return float64(n) / time.Since(start).Seconds(), int(n), nil
}
