// Package fakeapi is one fake API for unit tests: a fake dynamic client that versions what it stores as an
// API server does, and a rest.Config whose requests that client answers, for the clients built on a
// rest.Config alone (the WorkflowAction client, the controller's raw workflow updates).
package fakeapi
