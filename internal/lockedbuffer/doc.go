// Package lockedbuffer is a bytes.Buffer that tests read while a logger or a child process writes to it.
package lockedbuffer
