package bench

import (
	"slices"
	"time"
)

// Latencies summarizes a sample of durations.
type Latencies struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// summarize computes nearest-rank percentiles; an empty sample gives zeros and Count 0.
func summarize(sample []time.Duration) Latencies {
	if len(sample) == 0 {
		return Latencies{}
	}
	s := slices.Clone(sample)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		i = min(max(i, 0), len(s)-1)
		return ms(s[i])
	}
	return Latencies{Count: len(s), P50Ms: rank(0.50), P90Ms: rank(0.90), P99Ms: rank(0.99), MaxMs: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// ratioOf is a ÷ b, 0 where b is not positive (a figure not measured).
func ratioOf(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
