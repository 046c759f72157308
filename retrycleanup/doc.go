// Package retrycleanup deletes a retried workflow's previous run (pods and task results of the nodes a Retry removed) before any node runs again.
package retrycleanup
