package fanout

import (
	"context"

	"k8s.io/client-go/util/workqueue"
)

// Each calls call(i) for every i in [0, n), at most workers at a time (client-go's
// workqueue.ParallelizeUntil), and returns each call's error by index. Once ctx ends no call starts:
// ParallelizeUntil skips them silently, so each call not made gets ctx's error here, and a caller that
// joins the errors never takes skipped work for done work.
func Each(ctx context.Context, workers, n int, call func(i int) error) []error {
	errs := make([]error, n)
	made := make([]bool, n)
	workqueue.ParallelizeUntil(ctx, max(workers, 1), n, func(i int) { // no workers would make no call
		made[i] = true
		errs[i] = call(i)
	})
	for i := range errs {
		if !made[i] {
			errs[i] = ctx.Err()
		}
	}
	return errs
}
