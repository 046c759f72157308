package resourceversion

import "testing"

func TestRevisionsCompareAsNumbersAndUnknownFormatsAsEqual(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"9", "10", -1}, {"10", "9", 1}, {"7", "7", 0},
		{"", "7", 0}, {"7", "opaque", 0},
	}
	for _, tc := range cases {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
