// Package podfinalizer adds and releases the workflows.argoproj.io/status pod finalizer and sweeps orphaned pods.
package podfinalizer
