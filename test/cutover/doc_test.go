// Package cutover_test switches a namespace between stock argo's workflow-controller and wfguard, both ways, with workflows in flight.
package cutover_test
