package faultinject

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func rulesConfigMap(name, text string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{ConfigMapKey: text}}
}

func ruleNames(in *Injector) string {
	var names []string
	for _, r := range in.Rules() {
		names = append(names, r.Name)
	}
	return strings.Join(names, ",")
}

func TestTheConfigMapSourceReplacesRulesAndItsDeletionStopsInjection(t *testing.T) {
	ns := namespace(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	cms := kube.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(t.Context(), rulesConfigMap("faults", "first api resource=pods : error(500) for=10m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	src := &ConfigMapSource{Client: kube, Namespace: ns, Name: "faults", Policy: Policy{RequireExpiry: true}}
	rules, err := src.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	in := NewInjector(rules, 1, nil)
	defer in.Close()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = src.Run(ctx, in)
	}()
	defer wg.Wait()
	defer cancel()

	update := func(text string) {
		t.Helper()
		if _, err := cms.Update(t.Context(), rulesConfigMap("faults", text), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update("second api resource=pods : error(503) max=5\nthird api verb=list : error(500) for=1m")
	eventually(t, "the changed rules replaced the loaded ones", func() bool { return ruleNames(in) == "second,third" })

	update("forever api : error(500)") // breaks the policy: injection stops rather than keeping stale rules
	eventually(t, "a refused change stopped injection", func() bool { return len(in.Rules()) == 0 })

	update("again api : error(500) max=1")
	eventually(t, "a valid change resumed injection", func() bool { return ruleNames(in) == "again" })

	if err := cms.Delete(t.Context(), "faults", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleting the ConfigMap stopped injection", func() bool { return len(in.Rules()) == 0 })
	if in.ActiveRules() != 0 {
		t.Errorf("active rules = %d after the deletion", in.ActiveRules())
	}
}

func TestTheConfigMapSourceRefusesToStartOnAMissingOrBadSource(t *testing.T) {
	ns := namespace(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	cms := kube.CoreV1().ConfigMaps(ns)
	for _, cm := range []*corev1.ConfigMap{
		rulesConfigMap("no-expiry", "ok api : error(500) max=1\nforever api : error(500)"),
		rulesConfigMap("bad-syntax", "x api : 3*boom"),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-key"}, Data: map[string]string{"other": ""}},
	} {
		if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, want string
		line, col  int
	}{
		{"missing", "does not exist", 0, 0},
		{"no-key", `has no "rules" key`, 0, 0},
		{"no-expiry", "rule forever never expires", 2, 25},
		{"bad-syntax", `unknown action "boom"`, 1, 9},
	}
	for _, tc := range cases {
		src := &ConfigMapSource{Client: kube, Namespace: ns, Name: tc.name, Policy: Policy{RequireExpiry: true}}
		_, err := src.Load(t.Context())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
			continue
		}
		var pe *PositionError
		if tc.line > 0 && (!errors.As(err, &pe) || pe.Line != tc.line || pe.Col != tc.col) {
			t.Errorf("%s: err = %v, want line %d col %d", tc.name, err, tc.line, tc.col)
		}
	}
}
