package podfinalizer

import (
	"testing"

	"go.uber.org/goleak"
)

// The Releaser releases in parallel goroutines; none may outlive a call.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
