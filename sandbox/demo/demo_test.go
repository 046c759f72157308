package demo_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/demo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEveryExampleEndsInItsExpectedPhaseWithTheInvariantsHolding(t *testing.T) {
	root, err := controlplane.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ok, err := demo.Run(t.Context(), demo.Options{
		ExamplesDir: root + "/examples", Timeout: 2 * time.Minute, Out: &out,
		Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
	})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("the demo reported an unexpected phase or a violated invariant")
	}
	if !strings.Contains(out.String(), "invariants: hold") {
		t.Errorf("the report lacks the invariants verdict")
	}
}
