package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/compat"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// Namespaces of the two controllers: each manages one, on the same control plane and simulated node.
const (
	ArgoNamespace    = "interop-argo"
	WFGuardNamespace = "interop-wfguard"
)

// Options configure Start.
type Options struct {
	// Root is the wfguard module root (bin/ lives there).
	Root string
	// WFGuardBinary is a wfguard binary (compat.BuildWFGuard).
	WFGuardBinary string
	// LogDir receives the controllers' and servers' logs.
	LogDir string
	Logf   func(format string, args ...any)
}

// Target is one controller's side: its namespace and the argo-server serving it.
type Target struct {
	Controller compat.Controller
	Namespace  string
	Server     string // host:port of its argo-server
}

// Env is one embedded control plane with the simulated node, stock argo's workflow-controller and wfguard
// (each managing its own namespace), and one argo-server per namespace.
type Env struct {
	Argo       string // bin/argo
	Kubeconfig string
	Config     *rest.Config
	Client     versioned.Interface
	Targets    [2]Target // argo's, then wfguard's
	stops      []func() error
}

// Start starts everything an Env holds; Stop ends it. Argo's CLI must be built (make argo-tools).
func Start(ctx context.Context, opts Options) (*Env, error) {
	bin, err := checkArgoCLI(opts.Root)
	if err != nil {
		return nil, err
	}
	e := &Env{Argo: bin}
	if err := e.start(ctx, opts); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

func (e *Env) start(ctx context.Context, opts Options) error {
	if err := e.startCluster(ctx, opts); err != nil {
		return err
	}
	if err := e.startControllers(ctx, opts); err != nil {
		return err
	}
	for i, c := range []compat.Controller{compat.Argo, compat.WFGuard} {
		ns := []string{ArgoNamespace, WFGuardNamespace}[i]
		addr, err := e.startServer(ctx, ns, filepath.Join(opts.LogDir, "argo-server-"+string(c)+".log"))
		if err != nil {
			return err
		}
		e.Targets[i] = Target{Controller: c, Namespace: ns, Server: addr}
	}
	return nil
}

// startCluster starts the control plane, installs argo's other CRDs, creates both namespaces and starts the
// simulated node (compat's executor model) for them.
func (e *Env) startCluster(ctx context.Context, opts Options) error {
	cp, err := controlplane.Start(ctx, controlplane.Options{Root: opts.Root, Logf: opts.Logf})
	if err != nil {
		return err
	}
	e.stops = append(e.stops, cp.Stop)
	e.Kubeconfig, e.Config = cp.Kubeconfig, cp.Config()
	e.Config.QPS, e.Config.Burst = 200, 400
	if e.Client, err = versioned.NewForConfig(e.Config); err != nil {
		return err
	}
	if err := controlplane.InstallCRDs(ctx, e.Config, filepath.Join(opts.Root, "config", "crd", "argo"), time.Minute); err != nil {
		return err
	}
	for _, ns := range []string{ArgoNamespace, WFGuardNamespace} {
		if err := controlplane.CreateNamedNamespace(ctx, e.Config, ns); err != nil {
			return err
		}
	}
	node, err := simnode.Start(ctx, simnode.Options{Config: e.Config, Script: compat.ExecutorModel(), Logf: func(string, ...any) {}})
	if err != nil {
		return err
	}
	e.stops = append(e.stops, func() error { node.Stop(); return nil })
	return nil
}

// startControllers starts stock argo and wfguard as compat starts them, each managing its namespace.
func (e *Env) startControllers(ctx context.Context, opts Options) error {
	image, err := compat.ExecutorImage(opts.Root)
	if err != nil {
		return err
	}
	oracle, err := compat.StartOracle(ctx, e.Config, compat.OracleOptions{Root: opts.Root, Kubeconfig: e.Kubeconfig,
		Namespace: ArgoNamespace, ExecutorImage: image, LogPath: filepath.Join(opts.LogDir, "workflow-controller.log")})
	if err != nil {
		return err
	}
	e.stops = append(e.stops, oracle.Stop)
	// The same ConfigMap in wfguard's namespace: its controller reads it too, and argo-server will not start
	// without one.
	if err := compat.CreateConfigMap(ctx, e.Config, WFGuardNamespace, nil); err != nil {
		return err
	}
	wfg, err := compat.StartWFGuard(compat.WFGuardOptions{Binary: opts.WFGuardBinary, Kubeconfig: e.Kubeconfig,
		Namespace: WFGuardNamespace, ExecutorImage: image, LogPath: filepath.Join(opts.LogDir, "wfguard.log")})
	if err != nil {
		return err
	}
	e.stops = append(e.stops, func() error { return wfg.Stop(10 * time.Second) })
	return nil
}

// Stop ends what Start started, last first.
func (e *Env) Stop() error {
	var errs []error
	for i := len(e.stops) - 1; i >= 0; i-- {
		errs = append(errs, e.stops[i]())
	}
	e.stops = nil
	return errors.Join(errs...)
}

// checkArgoCLI returns bin/argo when hack/tools/build.sh argo built it from the current hack/tools/argocli.
func checkArgoCLI(root string) (string, error) {
	path := filepath.Join(root, "bin", "argo")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s is missing: run `make argo-tools` (%w)", path, err)
	}
	want, err := compat.ToolStamp(filepath.Join(root, "hack", "tools", "argocli"))
	if err != nil {
		return "", err
	}
	got, _ := os.ReadFile(path + ".stamp")
	if strings.TrimSpace(string(got)) != want {
		return "", fmt.Errorf("%s is stale (stamp %q, want %q): run `make argo-tools`", path, strings.TrimSpace(string(got)), want)
	}
	return path, nil
}
