// Package clientstatus is the status argo v3.7 writes for its own clients (argo get, the UI's progress bars
// and estimates, argo_workflows_workflow_condition): status.progress and each node's, status.resourcesDuration
// and each node's, status.estimatedDuration and each node's, and the PodRunning and Completed conditions.
//
// It computes them with argo's own library packages where argo has them (workflow/progress, util/resource)
// and as argo's operator does where it has not (the estimator, the conditions): from the nodes the pass
// decided, so they change only when the nodes changed and cost no write of their own.
package clientstatus
