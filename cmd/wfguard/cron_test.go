package main

import (
	"context"
	"errors"
	"testing"
)

func TestRunTogether(t *testing.T) {
	boom := errors.New("boom")
	untilDone := func(ctx context.Context) error { <-ctx.Done(); return nil }
	cancelled := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for _, tc := range []struct {
		name    string
		runs    []func(context.Context) error
		cancel  bool
		wantErr error
	}{
		{name: "one failing stops the other and its error is returned",
			runs: []func(context.Context) error{untilDone, func(context.Context) error { return boom }}, wantErr: boom},
		{name: "the end of the context stops both without error", runs: []func(context.Context) error{untilDone, cancelled}, cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			if err := runTogether(ctx, tc.runs...); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("runTogether = %v, want %v", err, tc.wantErr)
			}
		})
	}
}
