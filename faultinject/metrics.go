package faultinject

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Label names of wfguard_faultinject_injections_total; their values are a site, an action kind and a rule
// name from the loaded rules (bounded by the rules file).
const (
	labelSite   = "site"
	labelAction = "action"
	labelRule   = "rule"
)

type metrics struct {
	injections *prometheus.CounterVec
}

// Register adds the injector's metrics to reg: wfguard_faultinject_injections_total{site,action,rule} and
// the gauge wfguard_faultinject_active_rules (read from the current rules at each scrape).
func (in *Injector) Register(reg prometheus.Registerer) error {
	m := &metrics{injections: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wfguard_faultinject_injections_total",
		Help: "Faults injected on purpose, by site (api, informer, point), action and rule.",
	}, []string{labelSite, labelAction, labelRule})}
	active := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wfguard_faultinject_active_rules",
		Help: "Fault-injection rules that can still inject (loaded, not expired, not exhausted).",
	}, func() float64 { return float64(in.ActiveRules()) })
	if err := errors.Join(reg.Register(m.injections), reg.Register(active)); err != nil {
		return fmt.Errorf("registering fault-injection metrics: %w", err)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.metrics = m
	return nil
}

// injected counts one injection; a nil *metrics (not registered) counts nothing.
func (m *metrics) injected(inj Injection) {
	if m == nil {
		return
	}
	m.injections.WithLabelValues(inj.Site, inj.Action.Kind, inj.Rule).Inc()
}
