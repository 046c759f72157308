// Package extstatus carries wfguard's extra Workflow status fields through argo's v3 types, which lack them.
package extstatus
