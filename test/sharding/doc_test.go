// Package sharding_test runs two wfguard controllers on one API server, split by instance ID or by managed namespace, and checks neither touches the other's shard.
package sharding_test
