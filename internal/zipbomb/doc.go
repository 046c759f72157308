// Package zipbomb writes hostile status.compressedNodes for the tests of the bounds on inflating them.
package zipbomb
