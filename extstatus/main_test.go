package extstatus

import (
	"testing"

	"go.uber.org/goleak"
)

// The compression test runs Fit from several goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
