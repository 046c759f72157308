package controllerconfig

import "github.com/argoproj/argo-workflows/v3/config"

// Source hands out the controller configuration in force. The returned value is shared: callers must not
// modify it (deep-copy what they change).
type Source interface {
	Current() *config.Config
}

// Static is a configuration that never changes: tests, and a controller run without a ConfigMap.
type Static struct{ Config *config.Config }

// Current is the static configuration; nil is an empty one.
func (s Static) Current() *config.Config {
	if s.Config == nil {
		return &config.Config{}
	}
	return s.Config
}

// CurrentOf is src's configuration, an empty one when src is nil.
func CurrentOf(src Source) *config.Config {
	if src == nil {
		return &config.Config{}
	}
	if c := src.Current(); c != nil {
		return c
	}
	return &config.Config{}
}
