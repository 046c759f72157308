//go:build realnode

package e2ereal_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/test/harness"
	"github.com/wfguard/wfguard/test/realnode"
)

// artifactStore is a minimal Artifactory-style repository (PUT stores, GET returns, basic auth) on the
// pod bridge, where pods reach it and nothing else does.
type artifactStore struct {
	url    string
	mu     sync.Mutex
	blobs  map[string][]byte
	server *http.Server
	done   chan struct{}
}

const storeUser, storePassword = "argo", "s3cr3t"

func startArtifactStore(t *testing.T) *artifactStore {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(realnode.BridgeAddress, "0"))
	if err != nil {
		t.Fatalf("listening on the bridge for the artifact store: %v", err)
	}
	s := &artifactStore{url: "http://" + l.Addr().String() + "/repo", blobs: map[string][]byte{}, done: make(chan struct{})}
	s.server = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() {
		defer close(s.done)
		if err := s.server.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("artifact store: %v", err)
		}
	}()
	t.Cleanup(func() {
		_ = s.server.Close()
		<-s.done
	})
	return s
}

func (s *artifactStore) serve(w http.ResponseWriter, r *http.Request) {
	if user, password, ok := r.BasicAuth(); !ok || user != storeUser || password != storePassword {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodPut:
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.blobs[r.URL.Path] = data
		w.WriteHeader(http.StatusCreated)
	case http.MethodGet, http.MethodHead:
		data, ok := s.blobs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *artifactStore) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var paths []string
	for p := range s.blobs {
		paths = append(paths, p)
	}
	return paths
}

// useArtifactStore makes the store the namespace's default artifact repository, with its credentials in
// a Secret, as an install does.
func (e *env) useArtifactStore(s *artifactStore) {
	e.t.Helper()
	if _, err := e.Kube.CoreV1().Secrets(e.Namespace).Create(e.t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "repo-cred"},
		StringData: map[string]string{"username": storeUser, "password": storePassword},
	}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.Kube.CoreV1().ConfigMaps(e.Namespace).Create(e.t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "artifact-repositories",
			Annotations: map[string]string{"workflows.argoproj.io/default-artifact-repository": "local"}},
		Data: map[string]string{"local": `artifactory:
  repoURL: ` + s.url + `
  usernameSecret: {name: repo-cred, key: username}
  passwordSecret: {name: repo-cred, key: password}
`},
	}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// argoexec tars and uploads an output artifact to the namespace's repository, reports its location in the
// task result, and the successor's argoexec downloads and unpacks it as an input artifact.
func TestRealExecutorUploadsAnOutputArtifactAndDownloadsItAsAnInput(t *testing.T) {
	e := newEnv(t, controller.Options{})
	store := startArtifactStore(t)
	e.useArtifactStore(store)
	wf := e.Submit(`
metadata: {name: artifacts}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: produce, template: produce}
    - - name: consume
        template: consume
        arguments:
          artifacts: [{name: data, from: "{{steps.produce.outputs.artifacts.data}}"}]
  - name: produce
    container: {image: busybox:1.35, command: [sh, -c, 'echo "hello from the real node" > /tmp/data.txt']}
    outputs:
      artifacts: [{name: data, path: /tmp/data.txt}]
  - name: consume
    inputs:
      artifacts: [{name: data, path: /in/data.txt}]
    container: {image: busybox:1.35, command: [cat, /in/data.txt]}
`)
	done := e.WaitCompleted(wf.Name)
	if done.Status.Phase != wfv1.WorkflowSucceeded {
		t.Fatalf("phase %s, want Succeeded\n%s\n%s", done.Status.Phase, harness.Describe(done), e.describePods())
	}
	produce := e.Node(done, "artifacts[0].produce")
	var loc *wfv1.ArtifactoryArtifact
	if produce.Outputs != nil {
		for _, a := range produce.Outputs.Artifacts {
			if a.Name == "data" {
				loc = a.Artifactory
			}
		}
	}
	// argoexec reports an artifact saved to the default repository by its key only (the URL's path); the
	// consumer's argoexec resolves it against the repository again.
	if loc == nil || !strings.HasPrefix(loc.URL, "/repo/artifacts/") || !strings.HasSuffix(loc.URL, "/data.tgz") {
		t.Fatalf("produce's artifact data = %+v, want the key /repo/artifacts/.../data.tgz\n%s", loc, harness.Describe(done))
	}
	if stored := store.paths(); len(stored) != 1 || stored[0] != loc.URL {
		t.Errorf("the store holds %v, want exactly the reported key %s", stored, loc.URL)
	}
	result := e.taskResult(done, "artifacts[0].produce")
	if result.Outputs == nil || len(result.Outputs.Artifacts) != 1 || result.Outputs.Artifacts[0].Artifactory == nil ||
		result.Outputs.Artifacts[0].Artifactory.URL != loc.URL {
		t.Errorf("argoexec's task result outputs = %+v, want the artifact at %s", result.Outputs, loc.URL)
	}
	if got := e.programLogs(e.PodOf(done, "artifacts[1].consume"), "main"); !strings.HasPrefix(got, "hello from the real node\n") {
		t.Errorf("consume printed %q, want the produced file", got)
	}
	e.waitFinalizersReleased()
}
