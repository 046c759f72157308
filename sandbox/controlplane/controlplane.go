package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Options configure Start. Zero values give the defaults.
type Options struct {
	// Root is the wfguard module root (bin/ and config/crd live there). Default: found from the working dir.
	Root string
	// BinDir holds etcd, kube-apiserver and kube-controller-manager. Default: <Root>/bin.
	BinDir string
	// CRDDir holds the CRD manifests to install. Default: <Root>/config/crd. "-" installs none.
	CRDDir string
	// ControllerManager also starts kube-controller-manager (garbage collector, namespace and service
	// account controllers) for tests that need owner-reference garbage collection.
	ControllerManager bool
	// ReadyTimeout bounds the wait for each component and for CRD establishment. Default: 90s.
	ReadyTimeout time.Duration
	// Logf receives start-up and shutdown progress (e.g. t.Logf). Default: discard.
	Logf func(format string, args ...any)
	// ExtraAPIServerArgs are appended to kube-apiserver's flags (test/realnode: how to reach its kubelet).
	ExtraAPIServerArgs []string
}

// ControlPlane is a running etcd + kube-apiserver (+ kube-controller-manager) on 127.0.0.1.
type ControlPlane struct {
	dir       string
	opts      Options
	etcd      *Process
	apiserver *Process
	kcm       *Process
	config    *rest.Config
	// Kubeconfig is a kubeconfig file for the admin user, usable by kubectl and child processes.
	Kubeconfig string
}

// tempRoot holds one directory per running control plane, named cp-<pid>-<random>, so a later Start can
// remove the directories of test binaries that died without cleaning up.
func tempRoot() string { return filepath.Join(os.TempDir(), "wfguard-controlplane") }

// Start launches a control plane and installs the CRDs. On error nothing is left running.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	begin := time.Now()
	for attempt := 1; ; attempt++ {
		cp, err = startOnce(ctx, opts)
		var clash *portInUseError
		// A free port can be taken between probing and binding it; pick new ports, at most three times.
		if errors.As(err, &clash) && attempt < 3 {
			opts.Logf("controlplane: %v; retrying with new ports", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	opts.Logf("controlplane: ready in %s (apiserver %s, etcd pid %d, apiserver pid %d, controller-manager %t)",
		time.Since(begin).Round(time.Millisecond), cp.config.Host, cp.etcd.Pid(), cp.apiserver.Pid(), cp.kcm != nil)
	return cp, nil
}

func (o *Options) defaults() error {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 90 * time.Second
	}
	if o.Root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("finding the module root: %w", err)
		}
		if o.Root, err = ModuleRoot(wd); err != nil {
			return err
		}
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Root, "bin")
	}
	if o.CRDDir == "" {
		o.CRDDir = filepath.Join(o.Root, "config", "crd")
	}
	return nil
}

// startOnce starts each component in turn on the ports it picks. On error it stops what did start and
// removes its dir, and a port taken meanwhile comes back as a *portInUseError for Start to retry.
func startOnce(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	bins, err := findBinaries(opts)
	if err != nil {
		return nil, err
	}
	dir, err := newControlPlaneDir(opts.Logf)
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{dir: dir, opts: opts}
	defer func() {
		if err != nil {
			if stopErr := cp.Stop(); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			cp = nil
		}
	}()

	ports, err := FreePorts(3)
	if err != nil {
		return cp, err
	}
	etcdURL, err := cp.startEtcd(ctx, bins.etcd, ports[0], ports[1])
	if err != nil {
		return cp, err
	}
	token, err := cp.createCredentials()
	if err != nil {
		return cp, err
	}
	if err := cp.startAPIServer(ctx, bins.apiserver, ports[2], etcdURL, token); err != nil {
		return cp, err
	}
	if opts.CRDDir != "-" {
		if err := InstallCRDs(ctx, cp.config, opts.CRDDir, opts.ReadyTimeout); err != nil {
			return cp, err
		}
	}
	if bins.controllerManager != "" {
		if err := cp.startControllerManager(bins.controllerManager); err != nil {
			return cp, err
		}
	}
	return cp, nil
}

// componentBinaries are the paths of the binaries a control plane runs; controllerManager is "" unless
// Options.ControllerManager asks for it.
type componentBinaries struct {
	etcd, apiserver, controllerManager string
}

// findBinaries checks that every binary the options ask for is built and current, before anything starts.
func findBinaries(opts Options) (componentBinaries, error) {
	var bins componentBinaries
	var err error
	if bins.etcd, err = checkBinary(opts.BinDir, opts.Root, EtcdBinary); err != nil {
		return bins, err
	}
	if bins.apiserver, err = checkBinary(opts.BinDir, opts.Root, KubeAPIServerBinary); err != nil {
		return bins, err
	}
	if opts.ControllerManager {
		if bins.controllerManager, err = checkBinary(opts.BinDir, opts.Root, KubeControllerManagerBinary); err != nil {
			return bins, err
		}
	}
	return bins, nil
}

// newControlPlaneDir creates the control plane's temp dir, first removing those of test binaries that died.
func newControlPlaneDir(logf func(string, ...any)) (string, error) {
	sweepStaleDirs(logf)
	if err := os.MkdirAll(tempRoot(), 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", tempRoot(), err)
	}
	dir, err := os.MkdirTemp(tempRoot(), fmt.Sprintf("cp-%d-", os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("creating the control plane's temp dir: %w", err)
	}
	return dir, nil
}

// startEtcd starts etcd on clientPort and peerPort and waits until it is healthy; it returns its client URL.
func (cp *ControlPlane) startEtcd(ctx context.Context, bin string, clientPort, peerPort int) (string, error) {
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	var err error
	cp.etcd, err = StartProcess("etcd", bin, filepath.Join(cp.dir, "etcd.log"), []string{
		"--name=default", "--data-dir=" + filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL, "--unsafe-no-fsync=true",
		"--listen-metrics-urls=", "--log-level=warn",
	}, nil)
	if err != nil {
		return "", err
	}
	if err := waitFor(ctx, cp.etcd, cp.opts.ReadyTimeout, func(c *http.Client) bool {
		resp, err := c.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, &http.Client{Timeout: 2 * time.Second}); err != nil {
		return "", fmt.Errorf("waiting for etcd on %s: %w", etcdURL, err)
	}
	return etcdURL, nil
}

// createCredentials writes a new admin token and the service-account key pair into the control plane's
// dir, for kube-apiserver to start with; it returns the token.
func (cp *ControlPlane) createCredentials() (string, error) {
	token, err := randomHex(16)
	if err != nil {
		return "", err
	}
	if err := writeCredentials(cp.dir, token); err != nil {
		return "", err
	}
	return token, nil
}

// startAPIServer starts kube-apiserver on port, backed by etcdURL and admitting token as the admin, waits
// until it is ready and writes the admin kubeconfig.
func (cp *ControlPlane) startAPIServer(ctx context.Context, bin string, port int, etcdURL, token string) error {
	certDir := filepath.Join(cp.dir, "certs")
	var err error
	cp.apiserver, err = StartProcess("kube-apiserver", bin, filepath.Join(cp.dir, "kube-apiserver.log"), append([]string{
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--etcd-servers=" + etcdURL, "--cert-dir=" + certDir,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(cp.dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(cp.dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=RBAC",
		"--token-auth-file=" + filepath.Join(cp.dir, "tokens.csv"), "--anonymous-auth=false",
		"--allow-privileged=true", "--endpoint-reconciler-type=none", "--profiling=false",
	}, cp.opts.ExtraAPIServerArgs...), nil)
	if err != nil {
		return err
	}
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	if err := cp.waitForAPIServer(ctx, host, token, certDir); err != nil {
		return err
	}
	cp.Kubeconfig = filepath.Join(cp.dir, "kubeconfig")
	return writeKubeconfig(cp.Kubeconfig, cp.config)
}

// waitForAPIServer polls the apiserver's /readyz at host until it is ready, and sets the control plane's
// admin config once the apiserver has written its serving certificate into certDir.
func (cp *ControlPlane) waitForAPIServer(ctx context.Context, host, token, certDir string) error {
	var client *http.Client
	if err := waitFor(ctx, cp.apiserver, cp.opts.ReadyTimeout, func(*http.Client) bool {
		if client == nil {
			// The serving certificate appears in certDir once the apiserver has generated it.
			ca, err := os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
			if err != nil {
				return false
			}
			cp.config = &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca},
				QPS: 500, Burst: 1000}
			if client, err = rest.HTTPClientFor(cp.config); err != nil {
				client = nil
				return false
			}
			client.Timeout = 2 * time.Second
		}
		resp, err := client.Get(host + "/readyz")
		if err != nil {
			// The certificate file may have been read while the apiserver was still writing it (its CA
			// block missing): a client built from it fails TLS forever. Read it again next time.
			client.CloseIdleConnections()
			client = nil
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, nil); err != nil {
		return fmt.Errorf("waiting for kube-apiserver /readyz on %s: %w", host, err)
	}
	if client != nil {
		client.CloseIdleConnections()
	}
	return nil
}

// startControllerManager starts kube-controller-manager with the controllers tests rely on (garbage
// collection, namespaces, service accounts); nothing waits for it to be ready.
func (cp *ControlPlane) startControllerManager(bin string) error {
	var err error
	cp.kcm, err = StartProcess("kube-controller-manager", bin, filepath.Join(cp.dir, "kube-controller-manager.log"), []string{
		"--kubeconfig=" + cp.Kubeconfig, "--authentication-kubeconfig=" + cp.Kubeconfig,
		"--authorization-kubeconfig=" + cp.Kubeconfig, "--bind-address=127.0.0.1", "--secure-port=0",
		"--leader-elect=false", "--controllers=garbagecollector,namespace,serviceaccount",
		"--service-account-private-key-file=" + filepath.Join(cp.dir, "sa.key"),
		"--use-service-account-credentials=false",
	}, nil)
	return err
}

// Config returns a copy of the admin rest.Config (token auth, user in system:masters).
func (cp *ControlPlane) Config() *rest.Config { return rest.CopyConfig(cp.config) }

// Dir is the control plane's temp dir (etcd data, certificates, logs); Stop removes it.
func (cp *ControlPlane) Dir() string { return cp.dir }

// Pids lists the process IDs of the running components.
func (cp *ControlPlane) Pids() []int {
	return slices.Sorted(maps.Values(cp.Components()))
}

// Components maps each running component, named by its binary (EtcdBinary, KubeAPIServerBinary,
// KubeControllerManagerBinary), to its process ID.
func (cp *ControlPlane) Components() map[string]int {
	out := map[string]int{}
	for name, p := range map[string]*Process{EtcdBinary: cp.etcd, KubeAPIServerBinary: cp.apiserver, KubeControllerManagerBinary: cp.kcm} {
		if p != nil {
			out[name] = p.Pid()
		}
	}
	return out
}

// Stop terminates every component (controller-manager, apiserver, then etcd), checks that no process is
// left, and removes the temp dir. It is safe to call more than once.
func (cp *ControlPlane) Stop() error {
	begin := time.Now()
	var errs []error
	var pids []int
	for _, p := range []*Process{cp.kcm, cp.apiserver, cp.etcd} {
		if p == nil {
			continue
		}
		pids = append(pids, p.Pid())
		if err := p.Stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, pid := range pids {
		if !processGone(pid) {
			errs = append(errs, fmt.Errorf("control-plane process %d is still running after stop", pid))
		}
	}
	if cp.dir != "" {
		if err := os.RemoveAll(cp.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing control-plane dir %s: %w", cp.dir, err))
		}
	}
	cp.opts.Logf("controlplane: stopped in %s", time.Since(begin).Round(time.Millisecond))
	return errors.Join(errs...)
}

// waitFor polls ready until it holds, the process exits, ctx ends or timeout passes.
func waitFor(ctx context.Context, p *Process, timeout time.Duration, ready func(*http.Client) bool, c *http.Client) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready(c) {
			return nil
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", p.name, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("%s not ready after %s (the machine may be overloaded; raise Options.ReadyTimeout); last log lines:\n%s",
				p.name, timeout, p.LogTail(15))
		case <-tick.C:
		}
	}
}

// FreePorts returns n ports free on 127.0.0.1 when it looked.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeCredentials writes the admin token file and the service-account signing key pair.
func writeCredentials(dir, token string) error {
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"),
		[]byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return fmt.Errorf("writing the token file: %w", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating the service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding the service-account public key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return fmt.Errorf("writing the service-account key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.pub"),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return fmt.Errorf("writing the service-account public key: %w", err)
	}
	return nil
}

func writeKubeconfig(path string, c *rest.Config) error {
	ca := base64.StdEncoding.EncodeToString(c.CAData)
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: wfguard-test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: wfguard-test
  context: {cluster: wfguard-test, user: admin}
current-context: wfguard-test
`, c.Host, ca, c.BearerToken)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// sweepStaleDirs removes the temp dirs of control planes whose test binary is gone (it died before Stop).
func sweepStaleDirs(logf func(string, ...any)) {
	entries, err := os.ReadDir(tempRoot())
	if err != nil {
		return
	}
	for _, e := range entries {
		parts := strings.SplitN(e.Name(), "-", 3)
		if len(parts) != 3 || parts[0] != "cp" {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || !processGone(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(tempRoot(), e.Name())); err == nil {
			logf("controlplane: removed %s left by exited test process %d", e.Name(), pid)
		}
	}
}
