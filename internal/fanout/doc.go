// Package fanout makes a bounded number of independent calls at a time and returns each one's error.
package fanout
