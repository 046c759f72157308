// Package test holds the integration suites and their harness; the control plane, simulated node and sandbox they run on are product packages under sandbox/.
package test
