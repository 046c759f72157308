package truncate

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		s        string
		limit    int
		want     string
	}{
		{"a short string is kept", "abc", 3, "abc"},
		{"a long string is cut with a marker", "abcdef", 2, "ab... (4 more bytes)"},
		{"a cut never splits a rune", "aé", 2, "a... (2 more bytes)"},
	} {
		if got := String(tc.s, tc.limit); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.sentence, got, tc.want)
		}
	}
}
