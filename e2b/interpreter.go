package e2b

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// The code interpreter (port 49999): POST /execute runs code in the
// session's persistent interpreter and answers NDJSON lines as the code
// runs — stdout, stderr, each displayed output as a result, then the
// error, the last expression's result (is_main_result) and the figures
// left open, and end_of_execution — as E2B's code interpreter does.

// executeRequest is the body of POST /execute.
type executeRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id,omitempty"`
	Language  string            `json:"language,omitempty"`
	EnvVars   map[string]string `json:"env_vars,omitempty"`
}

// mimeKeys are E2B's names of the MIME types of a result.
var mimeKeys = map[string]string{
	"text/plain":             "text",
	"text/html":              "html",
	"text/markdown":          "markdown",
	"image/svg+xml":          "svg",
	"image/png":              "png",
	"image/jpeg":             "jpeg",
	"application/pdf":        "pdf",
	"text/latex":             "latex",
	"application/json":       "json",
	"application/javascript": "javascript",
}

// execute is POST /execute for session s.
func (g *Gateway) execute(w http.ResponseWriter, r *http.Request, s *api.Session) error {
	var req executeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	lang, err := contextLanguage(req.Language)
	if err != nil {
		return err
	}
	cid, lang, err := g.execContext(r.Context(), s.ID, req.ContextID, lang)
	if err != nil {
		return err
	}
	// The code may run until the sandbox ends, up to the daemon's longest
	// execution.
	timeout := float64(g.maxExecS)
	if end := deadlineOf(s); !end.IsZero() {
		timeout = min(timeout, max(1, end.Sub(g.o.Now()).Seconds()+1))
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	// The headers at once: the SDKs time the code from them, and abort
	// (which interrupts it) when it runs past their timeout.
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	line := func(v any) {
		_ = enc.Encode(v)
		if flusher != nil {
			flusher.Flush()
		}
	}
	displayed := 0
	e, err := g.o.Daemon.Exec(r.Context(), s.ID, &api.ExecRequest{Language: lang, Code: req.Code, Env: req.EnvVars, TimeoutS: &timeout, Context: cid}, func(ev api.Event) {
		switch ev.Type {
		case api.EventStdout, api.EventStderr:
			line(map[string]any{"type": ev.Type, "text": ev.Data, "timestamp": time.Now().UnixMicro()})
		case api.EventDisplay:
			if ev.Output != nil {
				displayed++
				line(resultOf(ev.Output, false))
			}
		}
	})
	if err != nil {
		// The answer has begun: the error goes as the execution's.
		line(map[string]any{"type": "error", "name": "SandboxError", "value": err.Error(), "traceback": ""})
		line(map[string]any{"type": "end_of_execution"})
		return nil
	}
	if e.Error != nil {
		line(map[string]any{"type": "error", "name": e.Error.Name, "value": e.Error.Value, "traceback": e.Error.Traceback})
	} else if lang == api.LanguageShell && e.ExitCode != 0 {
		line(map[string]any{"type": "error", "name": "CommandExitError", "value": "exit status " + strconv.Itoa(e.ExitCode), "traceback": e.Stderr})
	} else if e.Status != api.StatusOK {
		line(map[string]any{"type": "error", "name": errorName(e.Status), "value": "the execution " + e.Status, "traceback": ""})
	}
	// What was not displayed as it ran: the last expression's bundle
	// (its text/plain is the result) and the figures left open.
	rest := e.Outputs[min(displayed, len(e.Outputs)):]
	mainDone := false
	for i := range rest {
		main := !mainDone && e.Result != nil && rest[i].Bundle["text/plain"] == *e.Result
		mainDone = mainDone || main
		line(resultOf(&rest[i], main))
	}
	if e.Result != nil && !mainDone {
		line(map[string]any{"type": "result", "text": *e.Result, "is_main_result": true})
	}
	line(map[string]any{"type": "end_of_execution"})
	return nil
}

// resultOf is one output as E2B's result line.
func resultOf(o *api.Output, main bool) map[string]any {
	out := map[string]any{"type": "result", "is_main_result": main}
	if len(o.Bundle) == 0 {
		// A figure: its PNG, base64 as E2B sends images.
		if k, ok := mimeKeys[o.MIME]; ok {
			if isText(o.MIME) {
				b, _ := base64.StdEncoding.DecodeString(o.Data)
				out[k] = string(b)
			} else {
				out[k] = o.Data
			}
		}
		return out
	}
	for mime, data := range o.Bundle {
		k, ok := mimeKeys[mime]
		if !ok {
			k = mime
		}
		out[k] = data
	}
	return out
}

func isText(mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "application/pdf":
		return false
	}
	return true
}

// errorName names an execution that ended without an exception.
func errorName(status string) string {
	switch status {
	case api.StatusTimeout:
		return "TimeoutError"
	case api.StatusInterrupted:
		return "KeyboardInterrupt"
	}
	return "SandboxError"
}
