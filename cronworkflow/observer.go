package cronworkflow

// Observer hears the reconciler's decisions (argo's cron metrics implement it).
type Observer interface {
	// Triggered: a due run passed every gate and is being submitted.
	Triggered(namespace, name string)
	// ConcurrencyPolicyTriggered: Forbid skipped a run, or Replace terminated the active ones.
	ConcurrencyPolicyTriggered(namespace, name, policy string)
	// SubmissionError: a run could not be submitted (the SubmissionError condition was set).
	SubmissionError(namespace, name string)
	// SpecError: the CronWorkflow is invalid (the SpecError condition was set).
	SpecError(namespace, name string)
}

// NopObserver ignores everything; the default Observer.
type NopObserver struct{}

func (NopObserver) Triggered(string, string)                          {}
func (NopObserver) ConcurrencyPolicyTriggered(string, string, string) {}
func (NopObserver) SubmissionError(string, string)                    {}
func (NopObserver) SpecError(string, string)                          {}
