// Package actions defines the WorkflowAction API and applies actions to workflows inside the reconcile pipeline.
package actions
