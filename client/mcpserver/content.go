package mcpserver

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sandboxd/sandboxd/api"
)

// execText is an execution as a model reads it: the session when the call
// made it, the output, the result, the error, and how it ended when not
// plainly.
func execText(t target, ex *api.Execution) string {
	var b strings.Builder
	b.WriteString(sessionLine(t))
	section := func(name, text string) {
		if text == "" {
			return
		}
		fmt.Fprintf(&b, "%s:\n%s", name, text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	section("stdout", ex.Stdout)
	section("stderr", ex.Stderr)
	if ex.Result != nil {
		section("result", *ex.Result)
	}
	if ex.Error != nil && !strings.Contains(ex.Stderr, ex.Error.Traceback) {
		// The traceback is in stderr already, as a terminal shows it;
		// only an error that did not print is told again.
		section("error", ex.Error.Name+": "+ex.Error.Value+"\n"+ex.Error.Traceback)
	}
	switch {
	case ex.Status != api.StatusOK || ex.ExitCode != 0:
		fmt.Fprintf(&b, "status: %s (exit code %d)\n", ex.Status, ex.ExitCode)
	case b.Len() == len(sessionLine(t)):
		b.WriteString("(no output)\n")
	}
	if ex.StateReset {
		b.WriteString("note: the interpreter was restarted: variables from earlier calls are gone\n")
	}
	if ex.Truncated {
		b.WriteString("note: the output was cut to the session's limit\n")
	}
	return b.String()
}

// sessionLine says which session a call used when it made it: the model
// must learn the id to come back to it.
func sessionLine(t target) string {
	if !t.made {
		return ""
	}
	return fmt.Sprintf("[made session %s for this call; it is used whenever session_id is left out]\n", t.id)
}

// cutText cuts s to at most n bytes (at a rune boundary) and says so.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const note = "\n[… cut: the rest is longer than a tool result carries]\n"
	return api.Cut(s, max(n-len(note), 0)) + note
}

// sniff is the MIME type of a file's content, for images to come back as
// images.
func sniff(data []byte) string {
	mime := http.DetectContentType(data)
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = mime[:i]
	}
	return mime
}
