// Package exprlimits bounds what the functions of argo's expressions cost the controller: sprig's key, certificate and password generators are denied, and the functions that allocate by a count are capped.
package exprlimits
