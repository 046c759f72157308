// Package custommetrics serves the custom Prometheus metrics a workflow declares (spec.metrics and templates' metrics) as argo does.
package custommetrics
