package truncate

import (
	"fmt"
	"unicode/utf8"
)

// String returns s when it has at most limit bytes, else its first bytes up to limit (cut on a rune
// boundary) followed by a marker saying how many bytes were cut.
func String(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := max(limit, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d more bytes)", s[:cut], len(s)-cut)
}
