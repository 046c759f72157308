// Package actions is the whole WorkflowAction seam: what each action does to a workflow (Apply), the drain
// of a workflow's pending actions into its reconcile with their write-ahead record (Drainer.Drain), their
// outcomes once that write is stored (Drainer.Report), the actions of a gone or completed workflow
// (Drainer.FailOrphans, Drainer.SettleCompleted), their TTL garbage collection (Collector), and the client
// that requests an action and waits for its outcome (Request). Each is applied in order, once.
package actions
