package cmdlog

import (
	"bytes"
	"strings"
	"testing"
)

func TestTheLogFlagsPickTheFormatAndLevelOrNameTheWrongOne(t *testing.T) {
	cases := []struct {
		name, format, level string
		wantLogged          string // "" when nothing at info may be written
		wantErr             string
	}{
		{"json writes JSON lines", "json", "info", `"msg":"hello"`, ""},
		{"text writes key=value lines", "text", "info", "msg=hello", ""},
		{"a level above info drops info", "text", "warn", "", ""},
		{"another format is named", "xml", "info", "", `--log-format must be json or text, got "xml"`},
		{"an unknown level is named", "json", "loud", "", "--log-level"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			log, err := New(tc.format, tc.level, &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Info("hello")
			if got := out.String(); tc.wantLogged == "" && got != "" || !strings.Contains(got, tc.wantLogged) {
				t.Errorf("logged %q, want %q", got, tc.wantLogged)
			}
		})
	}
}
