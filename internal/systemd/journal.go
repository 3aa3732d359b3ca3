package systemd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/coreos/go-systemd/v22/journal"
)

// JournalHandler is a slog.Handler that sends each record to journald as
// one entry with its attributes as fields (session=ab12 → SESSION=ab12), so
// `journalctl -u sandboxd SESSION=ab12` finds a session's lines.
type JournalHandler struct {
	level  slog.Leveler
	attrs  []slog.Attr
	prefix string // of nested groups, as GROUP_
	send   func(msg string, p journal.Priority, fields map[string]string) error
}

// NewJournalHandler sends records at level or above to journald.
func NewJournalHandler(level slog.Leveler) *JournalHandler {
	return &JournalHandler{level: level, send: journal.Send}
}

// JournalAvailable reports whether standard error goes to journald (the
// daemon runs as a systemd service).
func JournalAvailable() bool {
	ok, err := journal.StderrIsJournalStream()
	return ok && err == nil
}

func (h *JournalHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *JournalHandler) Handle(_ context.Context, r slog.Record) error {
	fields := map[string]string{"SYSLOG_IDENTIFIER": "sandboxd"}
	for _, a := range h.attrs {
		addField(fields, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		addField(fields, h.prefix, a)
		return true
	})
	return h.send(r.Message, priority(r.Level), fields)
}

func (h *JournalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	for _, a := range attrs {
		a.Key = h.prefix + a.Key
		c.attrs = append(append([]slog.Attr{}, c.attrs...), a)
	}
	return &c
}

func (h *JournalHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "_"
	return &c
}

// priority maps slog levels to syslog priorities.
func priority(l slog.Level) journal.Priority {
	switch {
	case l >= slog.LevelError:
		return journal.PriErr
	case l >= slog.LevelWarn:
		return journal.PriWarning
	case l >= slog.LevelInfo:
		return journal.PriInfo
	}
	return journal.PriDebug
}

// addField adds an attribute as a journal field: upper case, A-Z 0-9 and _
// only, never starting with _ (those are journald's own).
func addField(fields map[string]string, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			addField(fields, prefix+a.Key+"_", g)
		}
		return
	}
	name := fieldName(prefix + a.Key)
	if name == "" {
		return
	}
	fields[name] = fmt.Sprint(v.Any())
}

func fieldName(key string) string {
	var b strings.Builder
	for _, c := range strings.ToUpper(key) {
		switch {
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return strings.TrimLeft(b.String(), "_0123456789")
}
