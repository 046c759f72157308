package controller

import (
	"fmt"
	"strings"

	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
)

// Clients are the API clients a Controller acts through: NewClients builds them from a rest.Config, tests
// give fakes.
type Clients struct {
	// Kube reads and writes Kubernetes' own kinds: pods, Events, ConfigMaps, claims, disruption budgets.
	Kube kubernetes.Interface
	// Argo reads task results and templates, and deletes workflows whose ttlStrategy expired.
	Argo versioned.Interface
	// Dynamic reads and writes workflows as unstructured objects, so wfguard's status fields survive.
	Dynamic dynamic.Interface
	// WorkflowsREST is the REST client Dynamic is built on: a pass's update goes through it with its body
	// encoded once, sharing Dynamic's rate limiter and error decoding (putWorkflow).
	WorkflowsREST rest.Interface
	// Actions reads WorkflowActions and writes their statuses.
	Actions *actionsv1.Client
}

// NewClients builds the controller's clients from config, as it is: whatever config.Wrap put around its
// transport (request metrics, injected faults) and its QPS and burst apply to every client. Kubernetes'
// own kinds are encoded as kubeContentType says (KubeClientConfig; protobuf by default, as
// kube-controller-manager's: its pod watch events decode several times faster than JSON); argo's custom
// resources are JSON whatever it says.
func NewClients(config *rest.Config, kubeContentType string) (Clients, error) {
	var c Clients
	var err error
	if c.Kube, err = kubernetes.NewForConfig(KubeClientConfig(config, kubeContentType)); err != nil {
		return Clients{}, fmt.Errorf("building the kubernetes client: %w", err)
	}
	if c.Argo, err = versioned.NewForConfig(config); err != nil {
		return Clients{}, fmt.Errorf("building the argo client: %w", err)
	}
	if c.WorkflowsREST, err = dynamicRESTClient(config); err != nil {
		return Clients{}, err
	}
	c.Dynamic = dynamic.New(c.WorkflowsREST)
	if c.Actions, err = actionsv1.NewForConfig(config); err != nil {
		return Clients{}, fmt.Errorf("building the WorkflowAction client: %w", err)
	}
	return c, nil
}

// check refuses clients with one missing: the controller would fail on it mid-pass instead.
func (c Clients) check() error {
	var missing []string
	for _, client := range []struct {
		name   string
		absent bool
	}{{"Kube", c.Kube == nil}, {"Argo", c.Argo == nil}, {"Dynamic", c.Dynamic == nil}, {"WorkflowsREST", c.WorkflowsREST == nil},
		{"Actions", c.Actions == nil}} {
		if client.absent {
			missing = append(missing, client.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("building the controller: no %s client", strings.Join(missing, ", "))
	}
	return nil
}

// KubeClientConfig is config for the clients of Kubernetes' own kinds: contentType for requests ("":
// protobuf), still accepting JSON (what an injected fault or a proxy may answer with).
func KubeClientConfig(config *rest.Config, contentType string) *rest.Config {
	out := rest.CopyConfig(config)
	if contentType == "" {
		contentType = runtime.ContentTypeProtobuf
	}
	out.ContentType = contentType
	out.AcceptContentTypes = contentType
	if contentType != runtime.ContentTypeJSON {
		out.AcceptContentTypes += "," + runtime.ContentTypeJSON
	}
	return out
}

// dynamicRESTClient is the dynamic client's REST client, built as dynamic.NewForConfig builds it, kept so
// that workflow updates made with it directly (putWorkflow) share its rate limiter and error decoding.
func dynamicRESTClient(config *rest.Config) (rest.Interface, error) {
	dynamicConfig := dynamic.ConfigFor(config)
	dynamicConfig.GroupVersion, dynamicConfig.APIPath = nil, ""
	client, err := rest.UnversionedRESTClientFor(dynamicConfig)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	return client, nil
}
