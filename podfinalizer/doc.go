// Package podfinalizer releases the workflows.argoproj.io/status pod finalizer (podspec adds it) and sweeps orphaned pods.
package podfinalizer
