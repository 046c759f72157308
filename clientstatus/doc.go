// Package clientstatus is the status argo v3.7 writes for its own clients (argo get, the UI's progress bars
// and estimates, argo_workflows_workflow_condition): status.progress and each node's, status.resourcesDuration
// and each node's, status.estimatedDuration and each node's, and the PodRunning and Completed conditions.
//
// It measures a pod with argo's own util/resource.DurationForPod, sums progress and resource durations by
// the rules of argo's workflow/progress and util/resource (its tests check the sums equal to argo's
// functions; argo's allocate per node and step), and estimates and sets conditions as argo's operator does:
// from the nodes the pass decided, so they change only when the nodes changed and cost no write of their own.
package clientstatus
