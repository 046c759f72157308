package sandbox

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/provenance"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/sandbox/simnode"
)

// Options configure a sandbox.
type Options struct {
	ControlPlane controlplane.Options
	// Namespace is created (with its default ServiceAccount) for workflows; the controller watches all.
	Namespace string
	Logger    *slog.Logger
	Registry  prometheus.Registerer
}

// Sandbox is a running control plane + controller + simulated node.
type Sandbox struct {
	ControlPlane *controlplane.ControlPlane
	Controller   *Controller
	Node         *simnode.Node
	Namespace    string
}

// Start brings everything up; Stop tears it down.
func Start(ctx context.Context, opts Options) (*Sandbox, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cp, err := controlplane.Start(ctx, opts.ControlPlane)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{ControlPlane: cp, Namespace: opts.Namespace}
	ok := false
	defer func() {
		if !ok {
			_ = s.Stop()
		}
	}()
	config := cp.Config()
	if opts.Namespace != "" {
		if err := controlplane.CreateNamedNamespace(ctx, config, opts.Namespace); err != nil {
			return nil, err
		}
	}
	argo, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("building the argo client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("building the kubernetes client: %w", err)
	}
	key, err := provenance.Load(ctx, kube.CoreV1().Secrets(metav1.NamespaceDefault), provenance.DefaultSecretName, rand.Reader)
	if err != nil {
		return nil, err
	}
	s.Controller, err = StartController(context.WithoutCancel(ctx), config, controller.Options{
		Workers: 8, StatusFinalizer: true, Validate: controller.ArgoValidator(argo), OrphanSweepInterval: 10 * time.Second,
		StatusCoalesceWindow: time.Second, RecordKey: key,
		Logger: opts.Logger, Registry: opts.Registry,
	})
	if err != nil {
		return nil, err
	}
	s.Node, err = simnode.Start(context.WithoutCancel(ctx), simnode.Options{Config: config,
		Script: simnode.AnnotationScript(simnode.Behavior{}, func(f string, a ...any) { opts.Logger.Warn(fmt.Sprintf(f, a...)) })})
	if err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// Config is the admin rest.Config of the sandbox's API server.
func (s *Sandbox) Config() *rest.Config { return s.ControlPlane.Config() }

// Stop stops the node, drains the controller and stops the control plane.
func (s *Sandbox) Stop() error {
	if s.Node != nil {
		s.Node.Stop()
	}
	var errs []error
	if s.Controller != nil {
		errs = append(errs, s.Controller.Stop())
	}
	if s.ControlPlane != nil {
		errs = append(errs, s.ControlPlane.Stop())
	}
	return errors.Join(errs...)
}
