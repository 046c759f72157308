package argometrics

// Triggered counts a CronWorkflow run that was started (cronworkflows_triggered_total); runs that
// concurrencyPolicy Forbid skips are not counted.
func (m *Metrics) Triggered(namespace, name string) {
	m.cronTriggered.WithLabelValues(name, namespace).Inc()
}

// ConcurrencyPolicyTriggered counts a CronWorkflow run that its concurrencyPolicy (Forbid or Replace)
// limited (cronworkflows_concurrencypolicy_triggered).
func (m *Metrics) ConcurrencyPolicyTriggered(namespace, name, policy string) {
	m.cronPolicy.WithLabelValues(name, namespace, policy).Inc()
}

// SubmissionError counts a CronWorkflow run whose workflow could not be created
// (error_count{cause="CronWorkflowSubmissionError"}); argo's counter has no CronWorkflow label.
func (m *Metrics) SubmissionError(namespace, name string) {
	m.errors.WithLabelValues(causeCronSubmission).Inc()
}

// SpecError counts a CronWorkflow found invalid (error_count{cause="CronWorkflowSpecError"}).
func (m *Metrics) SpecError(namespace, name string) {
	m.errors.WithLabelValues(causeCronSpec).Inc()
}
