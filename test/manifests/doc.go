// Package manifests checks the install manifests under config/ against a real control plane.
package manifests
