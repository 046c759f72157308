//go:build realnode

package e2ereal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/test/realnode"
)

var (
	cp   *controlplane.ControlPlane
	node *realnode.Node
	// unfit is why this host cannot run a node; every test skips with it.
	unfit string
)

func TestMain(m *testing.M) { os.Exit(runWithNode(m)) }

// runWithNode starts the control plane and the node, runs the tests, and tears both down, also on
// Ctrl-C; a host that cannot run a node runs the tests anyway so that each skips saying why.
func runWithNode(m *testing.M) int {
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	wd, err := os.Getwd()
	if err != nil {
		logf("FAIL: %v", err)
		return 1
	}
	root, err := controlplane.ModuleRoot(wd)
	if err != nil {
		logf("FAIL: %v", err)
		return 1
	}
	binDir := filepath.Join(root, "bin")
	if err := realnode.Check(realnode.ThisHost(), binDir); err != nil {
		var hostUnfit *realnode.HostUnfit
		if !errors.As(err, &hostUnfit) {
			logf("FAIL: %v", err)
			return 1
		}
		unfit = hostUnfit.Error()
		logf("%s: every test skips", unfit)
		return m.Run()
	}
	ctx := context.Background()
	if cp, err = controlplane.Start(ctx, controlplane.Options{Root: root, Logf: logf, ExtraAPIServerArgs: realnode.APIServerArgs}); err != nil {
		logf("FAIL: starting the control plane: %v", err)
		return 1
	}
	node, err = realnode.Start(ctx, realnode.Options{BinDir: binDir, Config: cp.Config(), Kubeconfig: cp.Kubeconfig, Logf: logf,
		BindNamespace: func(ns string) bool { return !strings.HasPrefix(ns, simPrefix+"-") }})
	if err != nil {
		logf("FAIL: %v", err)
		_ = cp.Stop()
		return 1
	}
	teardown := func() error { return errors.Join(node.Stop(), cp.Stop()) }
	stopSignals := realnode.TearDownOnSignal(func() {
		if err := teardown(); err != nil {
			logf("teardown: %v", err)
		}
	})
	code := m.Run()
	stopSignals()
	if err := teardown(); err != nil {
		logf("FAIL: %v", err)
		code = 1
	}
	if err := goleak.Find(); err != nil && code == 0 {
		logf("FAIL: goroutines left after the tests: %v", err)
		code = 1
	}
	return code
}
