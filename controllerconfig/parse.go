package controllerconfig

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/argoproj/argo-workflows/v3/config"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// DefaultName is argo's default name of the controller ConfigMap (workflow-controller --configmap).
const DefaultName = "workflow-controller-configmap"

// ConfigKey is the ConfigMap key that holds the whole configuration as one YAML document.
const ConfigKey = "config"

// Parse reads the controller configuration from a ConfigMap with argo's rules: the YAML document under
// "config" when that key exists (then it must be the only key), else each key is one top-level field of
// the configuration. Fields argo does not know are an error, as argo parses strictly.
func Parse(cm *corev1.ConfigMap) (*config.Config, error) {
	doc, err := document(cm.Data)
	if err != nil {
		return nil, err
	}
	cfg := &config.Config{}
	if err := yaml.UnmarshalStrict([]byte(doc), cfg); err != nil {
		return nil, fmt.Errorf("parsing ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return cfg, nil
}

// document is the configuration's YAML text. Top-level keys are joined as argo joins them: a multi-line
// value becomes an indented block under its key, a single-line value stays on the key's line.
func document(data map[string]string) (string, error) {
	if doc, ok := data[ConfigKey]; ok {
		if len(data) != 1 {
			return "", fmt.Errorf("the key %q must be the only key of the ConfigMap, found %d keys", ConfigKey, len(data))
		}
		return doc, nil
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := data[k]
		if !strings.Contains(v, "\n") {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
			continue
		}
		fmt.Fprintf(&b, "%s:\n", k)
		for _, line := range strings.Split(strings.Trim(v, "\n"), "\n") {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	return b.String(), nil
}

// SetKeys are the top-level fields the configuration sets (differing from an empty configuration), sorted.
func SetKeys(cfg *config.Config) ([]string, error) {
	fields, err := topLevel(cfg)
	if err != nil {
		return nil, err
	}
	zero, err := topLevel(&config.Config{})
	if err != nil {
		return nil, err
	}
	var keys []string
	for k, v := range fields {
		if string(zero[k]) != string(v) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

func topLevel(cfg *config.Config) (map[string]json.RawMessage, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the controller config: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("decoding the controller config: %w", err)
	}
	return fields, nil
}
