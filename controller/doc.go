// Package controller runs the serialized per-workflow reconcile pipeline: informers, queue, phases, persistence.
package controller
