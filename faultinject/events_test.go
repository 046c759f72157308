package faultinject

import (
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func withTransport(config *rest.Config, in *Injector) *rest.Config {
	config.Wrap(in.WrapTransport)
	return config
}

func TestInjectionsAreCountedAndTiedToTheirWorkflowOncePerRule(t *testing.T) {
	ns := namespace(t)
	in := NewInjector(mustRules(t, "cm-500 api verb=create resource=configmaps : error(500) max=3"), 1, nil)
	defer in.Close()
	reg := prometheus.NewRegistry()
	if err := in.Register(reg); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tied []Injection
	in.OnWorkflow(func(inj Injection) {
		mu.Lock()
		defer mu.Unlock()
		tied = append(tied, inj)
	})
	if got := gauge(t, reg, "wfguard_faultinject_active_rules"); got != 1 {
		t.Errorf("active rules = %v at load, want 1", got)
	}
	kube := kubernetes.NewForConfigOrDie(withTransport(cp.Config(), in))
	for i, wf := range []string{"wf-a", "wf-a", ""} {
		if err := createConfigMap(t, kube, ns, "c"+strings.Repeat("x", i), map[string]string{workflowLabel: wf}); !apierrors.IsInternalError(err) {
			t.Fatalf("create %d: err = %v, want an injected 500", i, err)
		}
	}
	if err := createConfigMap(t, kube, ns, "after-max", nil); err != nil {
		t.Errorf("max=3 did not end the rule: %v", err)
	}
	if got := testutil.ToFloat64(in.metrics.injections.WithLabelValues(SiteAPI, ActionError, "cm-500")); got != 3 {
		t.Errorf("wfguard_faultinject_injections_total{site=api,action=error,rule=cm-500} = %v, want 3", got)
	}
	if got := gauge(t, reg, "wfguard_faultinject_active_rules"); got != 0 {
		t.Errorf("active rules = %v after max, want 0", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tied) != 1 || tied[0].Workflow != ns+"/wf-a" || tied[0].Rule != "cm-500" {
		t.Errorf("workflow notifications = %+v, want one for %s/wf-a (the second hit of the same rule and workflow is not repeated)", tied, ns)
	}
}

// gauge reads a registered gauge by name.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s is not registered", name)
	return 0
}
