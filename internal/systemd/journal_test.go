package systemd

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"
)

func TestJournalHandler(t *testing.T) {
	type entry struct {
		msg    string
		p      journal.Priority
		fields map[string]string
	}
	var got []entry
	h := &JournalHandler{level: slog.LevelInfo, send: func(msg string, p journal.Priority, f map[string]string) error {
		got = append(got, entry{msg, p, f})
		return nil
	}}
	l := slog.New(h).With("req", 7)
	l.Debug("hidden")
	l.Info("session created", "session", "ab12", "took-ms", 1.5, "_secret", "x")
	l.WithGroup("seccomp").Warn("refused", "syscall", "mount")
	l.Error("failed", "err", errors.New("boom"))
	if len(got) != 3 {
		t.Fatalf("entries: %+v", got)
	}
	f := got[0].fields
	if got[0].msg != "session created" || got[0].p != journal.PriInfo || f["SESSION"] != "ab12" || f["REQ"] != "7" ||
		f["TOOK_MS"] != "1.5" || f["SECRET"] != "x" || f["SYSLOG_IDENTIFIER"] != "sandboxd" {
		t.Errorf("info entry: %+v", got[0])
	}
	if got[1].p != journal.PriWarning || got[1].fields["SECCOMP_SYSCALL"] != "mount" || got[1].fields["REQ"] != "7" {
		t.Errorf("grouped warning: %+v", got[1])
	}
	if got[2].p != journal.PriErr || got[2].fields["ERR"] != "boom" {
		t.Errorf("error entry: %+v", got[2])
	}
}
