// Package cronworkflow runs argo CronWorkflows: it starts their Workflows on schedule with argo v3.7's semantics.
package cronworkflow
