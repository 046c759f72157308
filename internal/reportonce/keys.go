package reportonce

import "sync"

// maxKeys bounds memory: past it the set starts over, so a key may be reported again (rarely).
const maxKeys = 10000

// Keys is a bounded set of reported keys, safe for concurrent use; the zero value is empty.
type Keys struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// First reports whether key is seen for the first time, and remembers it.
func (k *Keys) First(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.seen[key]; ok {
		return false
	}
	if k.seen == nil || len(k.seen) > maxKeys {
		k.seen = map[string]struct{}{}
	}
	k.seen[key] = struct{}{}
	return true
}
