// Package test holds the control-plane harness, the simulated node and the integration suites.
package test
