// Package podspec builds workflow step pods exactly as argoexec v3.7 expects them.
package podspec
