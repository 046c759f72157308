package retrycleanup

import (
	"testing"

	"go.uber.org/goleak"
)

// The Cleaner deletes in parallel goroutines; none may outlive a call.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
