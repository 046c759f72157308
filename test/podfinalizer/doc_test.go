// Package podfinalizer_test checks the status finalizer lifecycle on a real control plane with garbage collection.
package podfinalizer_test
