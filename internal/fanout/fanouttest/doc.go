// Package fanouttest counts the calls a fan-out has in flight at once, for tests over fake clientsets.
package fanouttest
