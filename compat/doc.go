// Package compat runs a corpus of workflows under stock argo's workflow-controller and under wfguard and compares what each did.
package compat
