package realnode

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

// Options configure Start.
type Options struct {
	// BinDir holds kubelet and node-images/ (hack/tools/build.sh node).
	BinDir string
	// Config and Kubeconfig reach the control plane as its admin (the kubelet registers with them).
	Config     *rest.Config
	Kubeconfig string
	// ReadyTimeout bounds each wait of the start (containerd's socket, the Node Ready). Default 90s.
	ReadyTimeout time.Duration
	// BindNamespace says whether the binder puts a namespace's unscheduled pods on this node (nil: every
	// namespace); a test that runs the simulated node beside it keeps the simulator's namespaces to it.
	BindNamespace func(namespace string) bool
	// Logf receives progress and, at Stop, every thing removed from the host. Default: discard.
	Logf func(format string, args ...any)
}

// Node is a running kubelet + containerd on this machine, registered as NodeName.
type Node struct {
	opts       Options
	l          layout
	kube       kubernetes.Interface
	containerd *controlplane.Process
	kubelet    *controlplane.Process
	forwarder  *forwarder
	services   *clusterServices
	iptables   string
	stopped    bool
}

// Start brings a node up: it first tears down what an earlier run killed before its teardown left, then
// starts containerd, imports the images, makes the bridge and the Service forwarder, runs the binder and
// the root CA publisher, and starts the kubelet, returning once the Node is Ready. On error everything
// started is taken down again.
func Start(ctx context.Context, opts Options) (n *Node, err error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 90 * time.Second
	}
	begin := time.Now()
	if err := SweepStale(opts.Logf); err != nil {
		return nil, err
	}
	if bridgeExists() {
		return nil, fmt.Errorf("realnode: bridge %s exists and no stale node owns it: another node runs on this machine", BridgeName)
	}
	// No node runs (no bridge), so a /kubepods tree is a leftover of one whose teardown did not finish.
	if err := removeKubepodsCgroups(func(s string) { opts.Logf("realnode: sweep: %s", s) }); err != nil {
		return nil, fmt.Errorf("realnode: removing a stale /kubepods: %w", err)
	}
	if err := os.MkdirAll(stateRoot(), 0o700); err != nil {
		return nil, fmt.Errorf("realnode: creating %s: %w", stateRoot(), err)
	}
	dir, err := os.MkdirTemp(stateRoot(), fmt.Sprintf("node-%d-", os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("realnode: creating the state dir: %w", err)
	}
	n = &Node{opts: opts, l: layout{dir: dir}}
	defer func() {
		if err != nil {
			err = fmt.Errorf("realnode: starting the node: %w", err)
			if stopErr := n.Stop(); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			n = nil
		}
	}()
	if n.kube, err = kubernetes.NewForConfig(opts.Config); err != nil {
		return n, fmt.Errorf("building a client: %w", err)
	}
	if err = mkdirs(n.l.containerdRoot(), n.l.containerdState(), n.l.runcRoot(), n.l.cniConfDir(),
		n.l.cniIPAMDir(), n.l.kubeletRoot(), n.l.podLogs()); err != nil {
		return n, err
	}
	if n.iptables, err = iptablesRules(); err != nil {
		return n, err
	}
	if err = os.WriteFile(n.l.iptablesSaved(), []byte(n.iptables), 0o600); err != nil {
		return n, fmt.Errorf("saving iptables rules: %w", err)
	}
	if err = saveSysctls(n.l.sysctlsSaved()); err != nil {
		return n, err
	}
	if err = writeConfigs(n.l); err != nil {
		return n, err
	}
	if err = recordHostDirsToCreate(n.l); err != nil {
		return n, err
	}
	if err = n.startContainerd(ctx); err != nil {
		return n, err
	}
	if err = n.importImages(); err != nil {
		return n, err
	}
	if err = createBridge(); err != nil {
		return n, err
	}
	apiserver, err := url.Parse(opts.Config.Host)
	if err != nil {
		return n, fmt.Errorf("parsing the apiserver address %q: %w", opts.Config.Host, err)
	}
	if n.forwarder, err = startForwarder(apiserver.Host); err != nil {
		return n, err
	}
	n.services = startClusterServices(n.kube, opts.Config.CAData, opts.BindNamespace, func(msg string) { opts.Logf("%s", msg) })
	if err = n.startKubelet(ctx); err != nil {
		return n, err
	}
	opts.Logf("realnode: node %s Ready in %s (state %s)", NodeName, time.Since(begin).Round(time.Millisecond), dir)
	return n, nil
}

// Dir is the node's state dir; the kubelet's, containerd's and the pods' logs are there until Stop.
func (n *Node) Dir() string { return n.l.dir }

func (n *Node) startContainerd(ctx context.Context) error {
	env := []string{"PATH=/usr/bin:/bin", "TMPDIR=" + n.l.dir}
	p, err := controlplane.StartProcess("containerd", "/usr/bin/containerd", n.l.log("containerd"),
		[]string{"--config", n.l.containerdConfig()}, env)
	if err != nil {
		return err
	}
	n.containerd = p
	return n.waitUntil(ctx, "containerd's socket", p, func(ctx context.Context) (bool, error) {
		return n.ctr("version") == nil, nil
	})
}

// ctr runs containerd's client against this node's containerd, in the CRI namespace.
func (n *Node) ctr(args ...string) error {
	return run("ctr", append([]string{"--address", n.l.containerdSocket(), "--namespace", "k8s.io"}, args...)...)
}

func (n *Node) importImages() error {
	for _, image := range []string{"pause.tar", "argoexec.tar", "busybox.tar"} {
		if err := n.ctr("images", "import", "--no-unpack=false", filepath.Join(n.opts.BinDir, "node-images", image)); err != nil {
			return fmt.Errorf("importing %s: %w", image, err)
		}
	}
	return nil
}

func (n *Node) startKubelet(ctx context.Context) error {
	// PATH without /usr/sbin: the kubelet finds no iptables and so adds no chains.
	env := []string{"PATH=/usr/bin:/bin", "TMPDIR=" + n.l.dir}
	p, err := controlplane.StartProcess("kubelet", filepath.Join(n.opts.BinDir, "kubelet"), n.l.log("kubelet"), []string{
		"--config=" + n.l.kubeletConfig(), "--kubeconfig=" + n.opts.Kubeconfig, "--root-dir=" + n.l.kubeletRoot(),
		"--cert-dir=" + filepath.Join(n.l.dir, "kubelet-pki"), "--hostname-override=" + NodeName,
		"--node-ip=" + BridgeAddress, "--v=1",
	}, env)
	if err != nil {
		return err
	}
	n.kubelet = p
	return n.waitUntil(ctx, "Node "+NodeName+" Ready", p, func(ctx context.Context) (bool, error) {
		node, err := n.kube.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// waitUntil polls ready until it holds, p exits, ctx ends or ReadyTimeout passes.
func (n *Node) waitUntil(ctx context.Context, what string, p *controlplane.Process, ready wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, n.opts.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if exited, exitErr := p.Exited(); exited {
			return false, fmt.Errorf("exited (%v)", exitErr)
		}
		return ready(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w; last lines of %s:\n%s", what, err, p.LogPath(), p.LogTail(20))
	}
	return nil
}

// Stop tears the node down in the order that leaves nothing behind: the kubelet, the Node object, every
// container (killed through containerd), containerd and its shims, the forwarder and cluster services, then
// the mounts, cgroups, bridge and sysctls; it checks that iptables is as it was and removes the state dir,
// logging each thing removed. It is safe to call more than once.
func (n *Node) Stop() error {
	if n.stopped {
		return nil
	}
	n.stopped = true
	begin := time.Now()
	report := func(s string) { n.opts.Logf("realnode: teardown: %s", s) }
	var errs []error
	if n.kubelet != nil {
		errs = append(errs, n.kubelet.Stop(10*time.Second))
		report(fmt.Sprintf("stopped kubelet (pid %d)", n.kubelet.Pid()))
	}
	if n.services != nil {
		n.services.stop()
	}
	if n.forwarder != nil {
		n.forwarder.stop()
		report("closed the kubernetes Service forwarder on " + ServiceIP)
	}
	if n.kube != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := n.kube.CoreV1().Nodes().Delete(ctx, NodeName, metav1.DeleteOptions{})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting Node %s: %w", NodeName, err))
		}
	}
	if n.containerd != nil {
		errs = append(errs, n.killContainers(report))
		errs = append(errs, n.containerd.Stop(10*time.Second))
		report(fmt.Sprintf("stopped containerd (pid %d)", n.containerd.Pid()))
	}
	errs = append(errs, tearDownState(n.l, report))
	if left := leftovers(n.l); len(left) > 0 {
		errs = append(errs, fmt.Errorf("left on the host after teardown: %s", strings.Join(left, "; ")))
	} else {
		report("checked: no process, mount, cgroup, bridge or state dir of the node is left")
	}
	if n.iptables != "" || n.containerd != nil {
		now, err := iptablesRules()
		errs = append(errs, err)
		if err == nil && now != n.iptables {
			errs = append(errs, fmt.Errorf("iptables rules changed while the node ran:\nbefore:\n%s\nafter:\n%s", n.iptables, now))
		}
	}
	n.opts.Logf("realnode: stopped in %s", time.Since(begin).Round(time.Millisecond))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("realnode: teardown: %w", err)
	}
	return nil
}

// killContainers kills every task containerd runs for this node and deletes it, so the shims exit.
func (n *Node) killContainers(report func(string)) error {
	out, err := exec.Command("ctr", "--address", n.l.containerdSocket(), "--namespace", "k8s.io", "tasks", "list", "-q").Output()
	if err != nil {
		return nil // containerd is not answering: the shims are found by socket path below
	}
	var errs []error
	for _, id := range strings.Fields(string(out)) {
		_ = n.ctr("tasks", "kill", "--signal", "SIGKILL", id)
		if err := n.ctr("tasks", "delete", "--force", id); err != nil {
			if !strings.Contains(err.Error(), "not found") { // gone with its sandbox's
				errs = append(errs, err)
			}
			continue
		}
		report("killed container " + id)
	}
	return errors.Join(errs...)
}

// tearDownState removes what a node left on the host, whether it stopped in order or its test binary was
// killed: its shims, mounts, the /kubepods cgroups, the bridge, the kubelet's sysctls, the shims' socket
// dir if it appeared, and the state dir.
func tearDownState(l layout, report func(string)) error {
	var errs []error
	for _, pid := range processesMentioning(l.containerdSocket()) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			report(fmt.Sprintf("killed containerd shim (pid %d)", pid))
		}
	}
	errs = append(errs, unmountAll(l.dir, report))
	errs = append(errs, removeKubepodsCgroups(report))
	errs = append(errs, deleteBridge(report))
	errs = append(errs, restoreSysctls(l.sysctlsSaved(), report))
	errs = append(errs, removeCreatedHostDirs(l, report))
	if err := errors.Join(errs...); err != nil {
		report("kept " + l.dir + " so that the next run's sweep retries")
		return err
	}
	if err := os.RemoveAll(l.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing the state dir %s: %w", l.dir, err))
	} else {
		report("removed " + l.dir)
	}
	// The common parent goes too once no node uses it (Remove fails on a non-empty one: another node's).
	if err := os.Remove(filepath.Dir(l.dir)); err == nil {
		report("removed " + filepath.Dir(l.dir))
	}
	return errors.Join(errs...)
}

// hostDirs are the host paths the node's programs create whatever their configuration says: the
// shims' sockets (containerd 1.6), libcni's result cache, the kubelet's device-plugin dir and its
// /var/log/containers links.
var hostDirs = []string{"/run/containerd", "/var/lib/cni", "/var/lib/kubelet", "/var/log/containers"}

// recordHostDirsToCreate writes which of hostDirs do not exist yet: teardown removes exactly those.
func recordHostDirsToCreate(l layout) error {
	var missing []string
	for _, d := range hostDirs {
		if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
			missing = append(missing, d)
		}
	}
	if err := os.WriteFile(l.createdHostDirs(), []byte(strings.Join(missing, "\n")), 0o600); err != nil {
		return fmt.Errorf("recording the host dirs the node will create: %w", err)
	}
	return nil
}

// removeCreatedHostDirs removes the host dirs that did not exist before the node started; of those that
// did, it removes only /var/log/containers links into the node's state dir.
func removeCreatedHostDirs(l layout, report func(string)) error {
	data, err := os.ReadFile(l.createdHostDirs())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the host dirs the node created: %w", err)
	}
	created := map[string]bool{}
	for _, d := range strings.Fields(string(data)) {
		created[d] = true
	}
	var errs []error
	for _, d := range hostDirs {
		if !created[d] {
			continue
		}
		if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", d, err))
			continue
		}
		report("removed " + d)
	}
	if !created["/var/log/containers"] {
		links, _ := filepath.Glob("/var/log/containers/*")
		for _, link := range links {
			if target, err := os.Readlink(link); err == nil && strings.HasPrefix(target, l.dir+"/") {
				if err := os.Remove(link); err != nil {
					errs = append(errs, fmt.Errorf("removing %s: %w", link, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// leftovers lists what of the node is still on the host.
func leftovers(l layout) []string {
	var left []string
	if bridgeExists() {
		left = append(left, "bridge "+BridgeName)
	}
	for _, pid := range processesMentioning(l.dir) {
		left = append(left, fmt.Sprintf("process %d", pid))
	}
	if mountinfo, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, mp := range mountsUnder(string(mountinfo), l.dir) {
			left = append(left, "mount "+mp)
		}
	}
	for _, root := range cgroupRoots() {
		if top := filepath.Join(root, "kubepods"); isDir(top) {
			left = append(left, "cgroup "+top)
		}
	}
	if _, err := os.Stat(l.dir); err == nil {
		left = append(left, "state dir "+l.dir)
	}
	return left
}

// SweepStale tears down the nodes whose test binary died before its teardown: state dirs under the state
// root whose owner process is gone.
func SweepStale(logf func(string, ...any)) error {
	entries, err := os.ReadDir(stateRoot())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("realnode: reading %s: %w", stateRoot(), err)
	}
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(stateRoot(), e.Name())
		pid := ownerPid(dir)
		if pid == 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		logf("realnode: tearing down the node of dead process %d (%s)", pid, dir)
		errs = append(errs, tearDownState(layout{dir: dir}, func(s string) { logf("realnode: sweep: %s", s) }))
	}
	return errors.Join(errs...)
}
