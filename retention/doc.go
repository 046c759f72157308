// Package retention deletes the oldest completed workflows beyond the controller ConfigMap's retentionPolicy counts, as argo's workflow garbage collector does.
package retention
