package cronworkflow

// Event reasons recorded on CronWorkflows.
const (
	// ReasonRunStarted (Normal): a scheduled run was created.
	ReasonRunStarted = "RunStarted"
	// ReasonRunSkipped (Normal): a due run was not started (concurrencyPolicy Forbid, suspend, when false).
	ReasonRunSkipped = "RunSkipped"
	// ReasonRunsReplaced (Normal): concurrencyPolicy Replace terminated the active runs.
	ReasonRunsReplaced = "RunsReplaced"
	// ReasonStopped (Normal): stopStrategy.expression became true; no more runs are scheduled.
	ReasonStopped = "Stopped"
	// ReasonSpecError (Warning): the CronWorkflow is invalid; nothing is scheduled until it is fixed.
	ReasonSpecError = "SpecError"
	// ReasonSubmissionError (Warning): a due run could not be created.
	ReasonSubmissionError = "SubmissionError"
	// ReasonStatusNotStored (Warning): the API server refuses the CronWorkflow's write for good.
	ReasonStatusNotStored = "StatusNotStored"
)
