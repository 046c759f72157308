// Package actions applies WorkflowActions (Suspend, Resume, Stop, Terminate) to workflows, in order, once.
package actions
