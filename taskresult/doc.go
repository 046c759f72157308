// Package taskresult decides when a pod node's WorkflowTaskResult is complete enough for the node to succeed.
package taskresult
