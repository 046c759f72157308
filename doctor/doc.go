// Package doctor audits a cluster for stuck and partial Argo workflows and applies only the safe repairs.
package doctor
