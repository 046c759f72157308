package cmdlog

import (
	"fmt"
	"io"
	"log/slog"
)

// New is a logger writing to w in format (json or text) at level (debug, info, warn, error); an error names
// the flag that is wrong.
func New(format, level string, w io.Writer) (*slog.Logger, error) {
	if format != "json" && format != "text" {
		return nil, fmt.Errorf("--log-format must be json or text, got %q", format)
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return slog.New(slog.NewJSONHandler(w, opts)), nil
}
