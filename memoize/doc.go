// Package memoize is argo's ConfigMap memoization cache: a template's outputs saved under its memoize key
// in a ConfigMap labelled workflows.argoproj.io/configmap-type: Cache, read back instead of running it again.
package memoize
