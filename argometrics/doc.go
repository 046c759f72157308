// Package argometrics serves argo v3.7's own controller metric names and labels next to wfguard's metrics.
package argometrics
