package argometrics

import (
	"context"
	"log/slog"
)

// CountLogs wraps a log handler so each record at info, warn or error level is counted in log_messages
// (labelled info, warning, error as argo's logrus levels are); debug records are not counted, as in argo.
func (m *Metrics) CountLogs(h slog.Handler) slog.Handler { return &countingHandler{next: h, m: m} }

type countingHandler struct {
	next slog.Handler
	m    *Metrics
}

func (h *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if level := levelName(r.Level); level != "" {
		h.m.logs.WithLabelValues(level).Inc()
	}
	return h.next.Handle(ctx, r)
}

func (h *countingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &countingHandler{next: h.next.WithAttrs(attrs), m: h.m}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{next: h.next.WithGroup(name), m: h.m}
}

func levelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return levelError
	case l >= slog.LevelWarn:
		return levelWarn
	case l >= slog.LevelInfo:
		return levelInfo
	}
	return ""
}
