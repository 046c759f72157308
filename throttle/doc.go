// Package throttle admits workflows to run within the controller ConfigMap's parallelism and namespaceParallelism, in priority order.
package throttle
