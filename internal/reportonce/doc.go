// Package reportonce remembers which keys were already reported, so a Warning is recorded once per key.
package reportonce
