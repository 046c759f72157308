// Package extstatus carries wfguard's extra Workflow status fields through argo's v3 types, which lack them; every owner of a status slice shares it.
package extstatus
