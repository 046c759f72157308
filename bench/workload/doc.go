// Package workload is the step the benchmark and chaos workflows are made of.
package workload
