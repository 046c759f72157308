package custommetrics

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
)

// Prefix starts every custom metric's name, as argo's exporter namespaces them (argo_workflows_).
const Prefix = "argo_workflows_"

// argo's messages for invalid names and label keys.
const (
	invalidNameMessage  = "metric name is invalid: names may only contain alphanumeric characters or '_'"
	invalidLabelMessage = "metric label '%s' is invalid: keys may only contain alphanumeric characters or '_'"
)

// Registry holds every custom metric emitted since the process started and serves them to Prometheus.
// Like argo (metricsTTL unset) series are kept for the life of the process. It is a prometheus.Collector
// whose families appear as workflows declare them, so it describes none up front (an unchecked collector).
type Registry struct {
	now      func() time.Time
	mu       sync.Mutex
	families map[string]*family
	// reserved are names (without Prefix) the controller's own argo metrics use.
	reserved map[string]bool
}

// family is one metric name: its type, help and series by label set.
type family struct {
	kind    wfv1.MetricType
	help    string
	buckets []float64
	series  map[string]*series
}

// series is one label set's value: a plain value (gauge, counter), a realtime span, or histogram counts.
type series struct {
	labels  []*wfv1.MetricLabel
	value   float64
	span    *Span
	count   uint64
	sum     float64
	buckets map[float64]uint64
}

// NewRegistry registers an empty Registry in reg; now is the clock realtime gauges read at each scrape.
func NewRegistry(reg prometheus.Registerer, now func() time.Time) (*Registry, error) {
	r := &Registry{now: now, families: map[string]*family{}, reserved: map[string]bool{}}
	if err := reg.Register(r); err != nil {
		return nil, fmt.Errorf("registering custom metrics: %w", err)
	}
	return r, nil
}

// Reserve refuses custom metrics under these exposed names (Prefix included): the controller serves its
// own metrics there, and a second family of the same name would make every scrape fail.
func (r *Registry) Reserve(exposed ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range exposed {
		r.reserved[strings.TrimPrefix(n, Prefix)] = true
	}
}

// reservedName is the reserved name a metric of this name and kind would expose, "" if none: a histogram
// also exposes name_bucket, name_sum and name_count.
func (r *Registry) reservedName(name string, kind wfv1.MetricType) string {
	if r.reserved[name] {
		return name
	}
	if kind != wfv1.MetricTypeHistogram {
		return ""
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if r.reserved[name+suffix] {
			return name + suffix
		}
	}
	return ""
}

// Describe sends nothing: the families are only known once workflows emit them.
func (r *Registry) Describe(chan<- *prometheus.Desc) {}

// Check reports why Emit would refuse em, with argo's message, without recording it.
func (r *Registry) Check(em Emission) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.prepare(em)
	return err
}

// Emit records em: a gauge is set (or added to, subtracted from), a counter added to, a histogram
// observes the value, a realtime gauge follows its span from now on.
func (r *Registry) Emit(em Emission) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	value, err := r.prepare(em)
	if err != nil {
		return fmt.Errorf("recording metric %s of workflow %s: %w", em.Metric.Name, em.OwnerUID, err)
	}
	m := &em.Metric
	f := r.families[m.Name]
	if f == nil {
		f = &family{kind: m.GetMetricType(), help: m.Help, series: map[string]*series{}}
		if m.Histogram != nil {
			f.buckets = sortedBuckets(m.Histogram)
		}
		r.families[m.Name] = f
	}
	s := f.series[m.GetKey()]
	if s == nil {
		s = &series{labels: m.Labels, buckets: map[float64]uint64{}}
		for _, b := range f.buckets {
			s.buckets[b] = 0 // every bound is served, also before a value falls under it
		}
		f.series[m.GetKey()] = s
	}
	f.record(s, m, em.Span, value)
	return nil
}

// record applies one emission's value to its series.
func (f *family) record(s *series, m *wfv1.Prometheus, span *Span, value float64) {
	switch {
	case span != nil:
		s.span = span
	case m.Gauge != nil:
		s.span = nil
		switch m.Gauge.Operation {
		case wfv1.GaugeOperationAdd:
			s.value += value
		case wfv1.GaugeOperationSub:
			s.value -= value
		default:
			s.value = value
		}
	case m.Counter != nil:
		s.value += value
	case m.Histogram != nil:
		s.count++
		s.sum += value
		for _, b := range f.buckets {
			if value <= b {
				s.buckets[b]++
			}
		}
	}
}

// prepare checks em against argo's rules and the families already emitted, and parses its value.
func (r *Registry) prepare(em Emission) (float64, error) {
	m := &em.Metric
	if !ValidName(m.Name) {
		return 0, fmt.Errorf("%s", invalidNameMessage)
	}
	for _, l := range m.Labels {
		if l == nil {
			return 0, fmt.Errorf("metric %s has an empty label", m.Name)
		}
		if !ValidName(l.Key) {
			return 0, fmt.Errorf(invalidLabelMessage, l.Key)
		}
	}
	kind := m.GetMetricType()
	if kind == wfv1.MetricTypeUnknown {
		return 0, fmt.Errorf("invalid metric spec")
	}
	if name := r.reservedName(m.Name, kind); name != "" {
		return 0, fmt.Errorf("metric %s%s is one of the controller's own metrics; a custom metric cannot use its name", Prefix, name)
	}
	if f := r.families[m.Name]; f != nil {
		if f.help != m.Help {
			return 0, fmt.Errorf("Help for metric %s is already set to %s, it cannot be changed", m.Name, f.help) //nolint:staticcheck // argo's message
		}
		if f.kind != kind {
			return 0, fmt.Errorf("Found existing %s for custom metric %s of type %s", f.kind, m.Name, kind) //nolint:staticcheck // argo's message
		}
	}
	if em.Span != nil {
		return 0, nil
	}
	value, err := strconv.ParseFloat(m.GetValueString(), 64)
	if err != nil {
		return 0, fmt.Errorf("parsing the value of metric %s: %w", m.Name, err)
	}
	return value, nil
}

// ValidName is argo's rule for metric names and label keys: Prometheus' legacy names without ':'.
func ValidName(name string) bool {
	return model.IsValidLegacyMetricName(name) && !strings.Contains(name, ":")
}

// sortedBuckets are a histogram's bucket bounds in order.
func sortedBuckets(h *wfv1.Histogram) []float64 {
	b := h.GetBuckets()
	sort.Float64s(b)
	return slices.Compact(b)
}

// Collect sends every series; a series Prometheus refuses (e.g. a label key twice) is sent as invalid.
func (r *Registry) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for name, f := range r.families {
		for _, s := range f.series {
			ch <- f.metric(Prefix+name, s, now)
		}
	}
}

// metric is one series as a Prometheus constant metric.
func (f *family) metric(fqName string, s *series, now time.Time) prometheus.Metric {
	keys, values := labelPairs(s.labels)
	desc := prometheus.NewDesc(fqName, f.help, keys, nil)
	var m prometheus.Metric
	var err error
	switch f.kind {
	case wfv1.MetricTypeHistogram:
		m, err = prometheus.NewConstHistogram(desc, s.count, s.sum, s.buckets, values...)
	case wfv1.MetricTypeCounter:
		m, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, s.value, values...)
	default:
		value := s.value
		if s.span != nil {
			value = s.span.seconds(now)
		}
		m, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, value, values...)
	}
	if err != nil {
		return prometheus.NewInvalidMetric(desc, fmt.Errorf("serving custom metric %s: %w", fqName, err))
	}
	return m
}

// labelPairs splits labels into keys and values, in the order given.
func labelPairs(labels []*wfv1.MetricLabel) (keys, values []string) {
	for _, l := range labels {
		keys = append(keys, l.Key)
		values = append(values, l.Value)
	}
	return keys, values
}
