package argometrics

import wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

// argo's names of deprecated features (the feature label of deprecated_feature).
const (
	featureCronSchedule = "cronworkflow schedule"
	featureMutex        = "synchronization mutex"
	featureSemaphore    = "synchronization semaphore"
)

// CronScheduleDeprecated counts a CronWorkflow that uses the deprecated singular spec.schedule.
func (m *Metrics) CronScheduleDeprecated(namespace string) {
	m.deprecated.WithLabelValues(featureCronSchedule, namespace).Inc()
}

// countDeprecatedSync counts each singular synchronization.mutex and synchronization.semaphore a new workflow
// declares, for itself or a template. argo counts at every lock operation, so its counts run higher.
func (m *Metrics) countDeprecatedSync(wf *wfv1.Workflow) {
	syncs := []*wfv1.Synchronization{wf.Spec.Synchronization}
	for i := range wf.Spec.Templates {
		syncs = append(syncs, wf.Spec.Templates[i].Synchronization)
	}
	for _, s := range syncs {
		if s == nil {
			continue
		}
		if s.Mutex != nil {
			m.deprecated.WithLabelValues(featureMutex, wf.Namespace).Inc()
		}
		if s.Semaphore != nil {
			m.deprecated.WithLabelValues(featureSemaphore, wf.Namespace).Inc()
		}
	}
}
