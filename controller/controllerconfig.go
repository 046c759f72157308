package controller

import (
	argoconfig "github.com/argoproj/argo-workflows/v3/config"

	"github.com/wfguard/wfguard/podgc"
)

// podGCSettings are the controller ConfigMap's podGC settings; unset ones keep wfguard's behaviour
// (delete at once, with the pod's own grace period).
func podGCSettings(cfg *argoconfig.Config) podgc.Settings {
	s := podgc.Settings{GracePeriodSeconds: cfg.PodGCGracePeriodSeconds}
	if d := cfg.PodGCDeleteDelayDuration; d != nil {
		delay := d.Duration
		s.DeleteDelay = &delay
	}
	return s
}
