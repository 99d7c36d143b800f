package main

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// TestGiveUpAfterSaturates: a --timeout or --grace so large that the stall
// watch's sum overflows (2562047h is the largest Duration) means never; it
// gave up at once when the sum wrapped to a negative wait. A real limit
// still gives up stallMargin after timeout+grace, or after grace once ctx
// is done.
func TestGiveUpAfterSaturates(t *testing.T) {
	t.Parallel()
	const huge = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		name           string
		timeout, grace time.Duration
		cancel         bool          // cancel ctx at the start
		want           time.Duration // when it gives up; 0: not within 100 years
	}{
		{"huge timeout", huge, time.Second, false, 0},
		{"huge timeout and grace", huge, huge, false, 0},
		{"huge grace, cancelled", time.Second, huge, true, 0},
		{"timeout", time.Second, 2 * time.Second, false, 3*time.Second + stallMargin},
		{"cancelled", time.Minute, 2 * time.Second, true, 2*time.Second + stallMargin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.cancel {
					cancel()
				}
				start := time.Now()
				giveUp, stop := giveUpAfter(ctx, tc.timeout, tc.grace)
				defer stop()
				never := time.NewTimer(100 * 365 * 24 * time.Hour)
				defer never.Stop()
				select {
				case <-giveUp:
					if got := time.Since(start); tc.want == 0 || got != tc.want {
						t.Errorf("giveUpAfter(%s, %s) gave up after %s, want %s (0: never)", tc.timeout, tc.grace, got, tc.want)
					}
				case <-never.C:
					if tc.want != 0 {
						t.Errorf("giveUpAfter(%s, %s) never gave up, want after %s", tc.timeout, tc.grace, tc.want)
					}
				}
			})
		})
	}
}

func TestAddSat(t *testing.T) {
	t.Parallel()
	const huge = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{time.Second, 2 * time.Second}, 3 * time.Second},
		{[]time.Duration{huge, 1}, huge},
		{[]time.Duration{huge - 1, 1}, huge},
		{[]time.Duration{huge / 2, huge / 2, huge / 2}, huge},
	} {
		if got := addSat(tc.in...); got != tc.want {
			t.Errorf("addSat(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
