package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/sandboxd/sandboxd/api"
)

// fakeAttached is the fake daemon's one attached process, pid 43, as the
// tools see it: what it was started with, the input written to it, and
// its output, stdout "hello\n" then stderr "warn\n", ending with 0 once
// its input is closed. A command "quick" is pid 44, which has ended
// before anything is written to it.
type fakeAttached struct {
	req    api.ProcessRequest
	input  string
	closed bool
}

const fakeAttachedOut = "hello\nwarn\n"

func (f *fakeDaemon) attachedRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sessions/{id}/processes/{pid}/stdin", f.stdin)
	mux.HandleFunc("GET /v1/sessions/{id}/processes/{pid}/output", f.output)
}

func (f *fakeDaemon) startAttached(req api.ProcessRequest) api.Process {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attached = fakeAttached{req: req}
	pid := 43
	if strings.HasSuffix(strings.Join(req.Argv, " "), "quick") {
		pid = 44
	}
	return api.Process{PID: pid, Command: strings.Join(req.Argv, " "), Attached: true, Tag: req.Tag, Argv: req.Argv}
}

func (f *fakeDaemon) stdin(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.session(w, r); !ok {
		return
	}
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.PathValue("pid") == "44" || (r.PathValue("pid") == "43" && f.attached.closed):
		answer(w, 409, api.ErrorBody{Error: api.ErrorDetail{Code: "conflict", Message: "process " + r.PathValue("pid") + " has ended"}})
	case r.PathValue("pid") != "43":
		notFound(w, "process "+r.PathValue("pid"))
	default:
		f.attached.input += string(b)
		f.attached.closed = r.URL.Query().Get("eof") == "1"
		w.WriteHeader(http.StatusNoContent)
	}
}

// output answers pid 43's output from ?from= as the daemon does: pieces
// cut to start there, then its end once its input was closed.
func (f *fakeDaemon) output(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.session(w, r); !ok {
		return
	}
	if r.PathValue("pid") != "43" {
		notFound(w, "attached process "+r.PathValue("pid"))
		return
	}
	from, _ := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	f.mu.Lock()
	ended := f.attached.closed
	f.mu.Unlock()
	w.Header().Set("Content-Type", api.StreamMIME)
	enc := json.NewEncoder(w)
	for _, p := range []struct {
		stream, data string
		off          int64
	}{{api.StreamStdout, "hello\n", 0}, {api.StreamStderr, "warn\n", 6}} {
		end := p.off + int64(len(p.data))
		if end <= from {
			continue
		}
		data, off := p.data, p.off
		if from > off {
			data, off = data[from-off:], from
		}
		_ = enc.Encode(api.ProcessOutput{Stream: p.stream, DataB64: base64.StdEncoding.EncodeToString([]byte(data)), Offset: off})
	}
	if ended {
		code := 0
		_ = enc.Encode(api.ProcessOutput{ExitCode: &code, Offset: int64(len(fakeAttachedOut))})
	}
}
