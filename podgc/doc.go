// Package podgc deletes a workflow's pods as its spec.podGC asks, once their capture is persisted and released.
package podgc
