// Package promptqueue is the workflow queue that hands out keys added for a change at once before keys whose requeue was delayed.
package promptqueue
