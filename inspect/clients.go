package inspect

import (
	"fmt"

	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	actionsv1 "github.com/wfguard/wfguard/actions/v1alpha1"
)

// Clients are the API clients the diagnostics use. Workflows are read with Dynamic so that wfguard's
// status extensions (status.suspended, status.shutdown, status.appliedActions) survive the decode.
type Clients struct {
	Kube    kubernetes.Interface
	Argo    versioned.Interface
	Dynamic dynamic.Interface
	Actions *actionsv1.Client
	// Host names the API server in messages.
	Host string
}

// NewClients builds every client from one config.
func NewClients(config *rest.Config) (*Clients, error) {
	c := &Clients{Host: config.Host}
	var err error
	if c.Kube, err = kubernetes.NewForConfig(config); err != nil {
		return nil, fmt.Errorf("building the kubernetes client: %w", err)
	}
	if c.Argo, err = versioned.NewForConfig(config); err != nil {
		return nil, fmt.Errorf("building the argo client: %w", err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(config); err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	if c.Actions, err = actionsv1.NewForConfig(config); err != nil {
		return nil, err
	}
	return c, nil
}
