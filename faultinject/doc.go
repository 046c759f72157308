// Package faultinject injects informer, API, worker and crash-point faults for tests and guarded staging runs.
package faultinject
