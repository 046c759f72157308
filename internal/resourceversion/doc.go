// Package resourceversion orders the resourceVersions of objects read from an etcd-backed API server.
package resourceversion
