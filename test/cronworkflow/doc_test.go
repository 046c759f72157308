// Package cronworkflow_test runs CronWorkflows on a real control plane: the cron reconciler on a fake clock the
// tests step, the workflow controller and a simulated node running the runs it creates.
package cronworkflow_test
