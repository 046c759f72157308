package compat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/sandbox/controlplane"
)

const (
	// ArgoBinary is stock argo's workflow-controller as hack/tools/build.sh argo builds it into bin/.
	ArgoBinary = "workflow-controller"
	// ArgoModule is the module the oracle is built from; its version is the product's (go.mod).
	ArgoModule = "github.com/argoproj/argo-workflows/v3"
	// ConfigMapName is the ConfigMap argo's controller reads its configuration from (its --configmap default).
	ConfigMapName = "workflow-controller-configmap"
)

// OracleOptions configure StartOracle. The flags are those wfguard's controller shares with argo's, so the
// two can run with the same settings.
type OracleOptions struct {
	// Root is the wfguard module root (bin/ and hack/tools/argo live there).
	Root string
	// Kubeconfig is the admin kubeconfig of the control plane (controlplane.ControlPlane.Kubeconfig).
	Kubeconfig string
	// Namespace is both argo's installation namespace (its ConfigMap's) and the one it manages
	// (--namespaced --managed-namespace).
	Namespace string
	// ExecutorImage is --executor-image. Default: quay.io/argoproj/argoexec:<argo version>.
	ExecutorImage string
	// Workers, QPS and Burst are --workflow-workers, --qps and --burst. Defaults: 4, 50, 100.
	Workers int
	QPS     float32
	Burst   int
	// ConfigData is the data of the workflow-controller-configmap StartOracle creates (argo's config keys,
	// e.g. "instanceID"). Metrics and telemetry are off unless set here: their fixed ports would clash.
	ConfigData map[string]string
	// LogPath receives the controller's output. Default: a file in a new temp dir, removed by Stop.
	LogPath string
	// Env are more NAME=value variables for the controller, e.g. ARGO_POD_STATUS_CAPTURE_FINALIZER=true
	// (argo adds and removes the pod status finalizer only with it).
	Env []string
}

// Oracle is a running stock argo workflow-controller: a controlplane.Process (Pid, Exited, LogPath, LogTail)
// with the temp dir of its log.
type Oracle struct {
	*controlplane.Process
	tempDir string
}

// StartOracle creates argo's ConfigMap in opts.Namespace and starts bin/workflow-controller against the
// control plane, in single-instance mode (LEADER_ELECTION_DISABLE=true) and with an environment holding no
// ARGO_* variables (argo reads its flags from them). Argo's three other CRDs (config/crd/argo) must be
// installed first. It returns once the process runs; argo then syncs its informers on its own.
func StartOracle(ctx context.Context, config *rest.Config, opts OracleOptions) (*Oracle, error) {
	if opts.Root == "" || opts.Kubeconfig == "" || opts.Namespace == "" {
		return nil, errors.New("starting argo's workflow-controller: Root, Kubeconfig and Namespace are required")
	}
	version, err := ArgoVersion(opts.Root)
	if err != nil {
		return nil, err
	}
	binary, err := checkArgoBinary(opts.Root)
	if err != nil {
		return nil, err
	}
	if opts.ExecutorImage == "" {
		opts.ExecutorImage = "quay.io/argoproj/argoexec:" + version
	}
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	if opts.QPS == 0 {
		opts.QPS = 50
	}
	if opts.Burst == 0 {
		opts.Burst = 100
	}
	if err := CreateConfigMap(ctx, config, opts.Namespace, opts.ConfigData); err != nil {
		return nil, err
	}
	o := &Oracle{}
	logPath := opts.LogPath
	if logPath == "" {
		if o.tempDir, err = os.MkdirTemp("", "wfguard-oracle-"); err != nil {
			return nil, fmt.Errorf("starting argo's workflow-controller: %w", err)
		}
		logPath = filepath.Join(o.tempDir, "workflow-controller.log")
	}
	o.Process, err = controlplane.StartProcess("argo's workflow-controller", binary, logPath, []string{
		"--kubeconfig=" + opts.Kubeconfig, "--namespace=" + opts.Namespace,
		"--namespaced", "--managed-namespace=" + opts.Namespace, "--configmap=" + ConfigMapName,
		"--executor-image=" + opts.ExecutorImage, "--workflow-workers=" + strconv.Itoa(opts.Workers),
		"--qps=" + strconv.FormatFloat(float64(opts.QPS), 'f', -1, 32), "--burst=" + strconv.Itoa(opts.Burst),
		"--loglevel=info", "--log-format=text",
	}, append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LEADER_ELECTION_DISABLE=true"}, opts.Env...))
	if err != nil {
		o.removeTemp()
		return nil, err
	}
	return o, nil
}

// Stop terminates the controller's process group (SIGTERM, then SIGKILL after 10s) and removes the temp
// dir holding its log, if StartOracle made one. It is safe to call more than once.
func (o *Oracle) Stop() error {
	defer o.removeTemp()
	return o.Process.Stop(10 * time.Second)
}

func (o *Oracle) removeTemp() {
	if o.tempDir != "" {
		_ = os.RemoveAll(o.tempDir)
	}
}

// CreateConfigMap creates (or updates) argo's workflow-controller-configmap in namespace: metrics and
// telemetry off (their fixed ports would clash), then data.
func CreateConfigMap(ctx context.Context, config *rest.Config, namespace string, data map[string]string) error {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating argo's ConfigMap: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: namespace},
		Data: map[string]string{"metricsConfig": "enabled: false\n", "telemetryConfig": "enabled: false\n"}}
	for k, v := range data {
		cm.Data[k] = v
	}
	_, err = client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating argo's ConfigMap %s/%s: %w", namespace, ConfigMapName, err)
	}
	return nil
}

// ArgoVersion is the argo-workflows version the product's go.mod requires.
func ArgoVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("reading the argo version: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == ArgoModule {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("reading the argo version: go.mod does not require %s", ArgoModule)
}

// ArgoModuleDir is the argo-workflows module in the Go module cache (it holds argo's examples/).
func ArgoModuleDir(root string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", ArgoModule)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding the %s module dir: %w", ArgoModule, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// expectedArgoStamp is what hack/tools/build.sh argo writes next to the workflow-controller (ToolStamp of
// hack/tools/argo).
func expectedArgoStamp(root string) (string, error) {
	return ToolStamp(filepath.Join(root, "hack", "tools", "argo"))
}

// ToolStamp is what hack/tools/build.sh writes next to a binary it builds from the tools module in dir: the
// first 16 hex digits of sha256(go.mod + go.sum + the Go version + "\n").
func ToolStamp(dir string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", fmt.Errorf("reading the tools module %s to check a binary's stamp: %w", dir, err)
		}
		h.Write(data)
	}
	h.Write([]byte(runtime.Version() + "\n"))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func checkArgoBinary(root string) (string, error) {
	path := filepath.Join(root, "bin", ArgoBinary)
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s is missing: run `make argo-tools` (a cold build takes several minutes)", path)
	}
	if err != nil {
		return "", fmt.Errorf("checking %s: %w", path, err)
	}
	if info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable: run `make argo-tools`", path)
	}
	want, err := expectedArgoStamp(root)
	if err != nil {
		return "", err
	}
	got, err := os.ReadFile(path + ".stamp")
	if err != nil || strings.TrimSpace(string(got)) != want {
		return "", fmt.Errorf("%s is stale (stamp %q, want %q for hack/tools/argo and %s): run `make argo-tools`",
			path, strings.TrimSpace(string(got)), want, runtime.Version())
	}
	return path, nil
}
