// Package controllerconfig_test runs the controller with argo's controller ConfigMap on a real API server.
package controllerconfig_test
