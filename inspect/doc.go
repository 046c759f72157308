// Package inspect reads Argo workflows and the objects around them straight from the API server, for wfguard's read-only diagnostics.
package inspect
