package resourceversion

import "strconv"

// Compare orders etcd-backed resourceVersions (decimal revisions); unparsable ones compare equal, so an
// unknown format never blocks reconciliation.
func Compare(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	switch {
	case errA != nil || errB != nil || x == y:
		return 0
	case x < y:
		return -1
	}
	return 1
}
