// Package workload is the step the benchmark and chaos workflows are made of, and the recursion bombs
// both submit beside them.
package workload
