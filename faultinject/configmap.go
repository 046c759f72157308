package faultinject

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// ConfigMapKey is the key of a rules ConfigMap that holds the rules text.
const ConfigMapKey = "rules"

// ConfigMapSource keeps an Injector's rules equal to a ConfigMap's "rules" key: a change replaces them (for=
// windows restart then), a change that does not parse or breaks the policy stops all injection, and deleting
// the ConfigMap stops all injection. Its client must not go through the injector, so faults can always be
// switched off.
type ConfigMapSource struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	Policy    Policy
	Clock     clock.Clock
	Logger    *slog.Logger

	mu   sync.Mutex
	last string // the text last applied ("" after a deletion or a refusal)
}

// Load reads the ConfigMap once, at start-up: a missing ConfigMap or key, or bad rules, is an error.
func (s *ConfigMapSource) Load(ctx context.Context) ([]*Rule, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("fault rules ConfigMap %s/%s does not exist", s.Namespace, s.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading fault rules ConfigMap %s/%s: %w", s.Namespace, s.Name, err)
	}
	text, ok := cm.Data[ConfigMapKey]
	if !ok {
		return nil, fmt.Errorf("fault rules ConfigMap %s/%s has no %q key", s.Namespace, s.Name, ConfigMapKey)
	}
	rules, err := s.parse(text)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.last = text
	s.mu.Unlock()
	return rules, nil
}

func (s *ConfigMapSource) parse(text string) ([]*Rule, error) {
	clk := s.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	rules, err := ParseRules(strings.NewReader(text), clk.Now())
	if err == nil {
		err = s.Policy.Check(rules)
	}
	if err != nil {
		return nil, fmt.Errorf("fault rules ConfigMap %s/%s: %w", s.Namespace, s.Name, err)
	}
	return rules, nil
}

// Run watches the ConfigMap until ctx ends and applies each change to in.
func (s *ConfigMapSource) Run(ctx context.Context, in *Injector) error {
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	factory := informers.NewSharedInformerFactoryWithOptions(s.Client, 0, informers.WithNamespace(s.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.Name).String()
		}))
	defer factory.Shutdown()
	apply := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		text := cm.Data[ConfigMapKey]
		s.mu.Lock()
		defer s.mu.Unlock()
		if text == s.last {
			return // the initial add of what Load read, or a change elsewhere in the ConfigMap
		}
		s.last = text
		rules, err := s.parse(text)
		if err != nil {
			in.SetRules(nil)
			s.last = ""
			log.Error("FAULT INJECTION STOPPED: the new rules are refused", "err", err)
			return
		}
		in.SetRules(rules)
		LogRules(log, "FAULT INJECTION RULES REPLACED", rules, "source", "configmap "+s.Namespace+"/"+s.Name)
	}
	if _, err := factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    apply,
		UpdateFunc: func(_, obj any) { apply(obj) },
		DeleteFunc: func(any) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.last = ""
			in.SetRules(nil)
			log.Warn("FAULT INJECTION STOPPED: the rules ConfigMap was deleted", "configmap", s.Namespace+"/"+s.Name)
		},
	}); err != nil {
		return fmt.Errorf("watching fault rules ConfigMap %s/%s: %w", s.Namespace, s.Name, err)
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	return nil
}

// LogRules writes the loud lines that list active fault rules: a headline with attrs, then one per rule.
func LogRules(log *slog.Logger, headline string, rules []*Rule, attrs ...any) {
	log.Warn(headline, append([]any{"rules", len(rules)}, attrs...)...)
	for _, r := range rules {
		log.Warn("FAULT RULE ACTIVE", "rule", r.Name, "site", r.Site, "line", r.Line, "text", r.Text)
	}
}
