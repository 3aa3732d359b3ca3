package e2b

import (
	"context"
	"net/http"
	"strings"

	"github.com/sandboxd/sandboxd/api"
)

// Code contexts (port 49999): E2B's createCodeContext, listCodeContexts,
// removeCodeContext and restartCodeContext over sandboxd's contexts. Each
// sandbox has E2B's default contexts, "python" (sandboxd's default
// context) and "bash" (shell executions in the home folder), and runs
// JavaScript cells that name no context in the session's node interpreter
// (where the template has node); a
// Python or JavaScript context of its own is a sandboxd context, an
// interpreter with its own globals; a bash one a sandboxd shell context, a
// working folder.

// Ids of the default contexts, as E2B's code interpreter names them.
const (
	pythonContext     = "python"
	javascriptContext = "javascript"
	bashContext       = "bash"
)

// codeContext is one of E2B's code contexts.
type codeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

// createContextRequest is the body of POST /contexts.
type createContextRequest struct {
	Language string `json:"language,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
}

// e2bContext is sandboxd context c as E2B shows it.
func e2bContext(c api.CodeContext) codeContext {
	lang := c.Language
	if lang == api.LanguageShell {
		lang = "bash"
	}
	return codeContext{ID: c.ID, Language: lang, Cwd: fromSandbox(c.Cwd)}
}

// contextLanguage is E2B language name as sandboxd's.
func contextLanguage(name string) (string, error) {
	switch name {
	case "", "python":
		return api.LanguagePython, nil
	case "bash", "sh":
		return api.LanguageShell, nil
	case "javascript", "js":
		return api.LanguageJavaScript, nil
	}
	return "", errorf(http.StatusNotImplemented, "language %s is not served by sandboxd's code interpreter: python, javascript (where the template has node) and bash are", api.Quote(name))
}

// contexts is GET /contexts: the default ones, then the sandbox's own.
func (g *Gateway) contexts(w http.ResponseWriter, r *http.Request, s *api.Session) error {
	cs, err := g.o.Daemon.Contexts(r.Context(), s.ID)
	if err != nil {
		return err
	}
	out := []codeContext{{ID: pythonContext, Language: "python", Cwd: home}, {ID: bashContext, Language: "bash", Cwd: home}}
	for _, c := range cs {
		if c.ID != api.ContextDefault {
			out = append(out, e2bContext(c))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// createContext is POST /contexts.
func (g *Gateway) createContext(w http.ResponseWriter, r *http.Request, s *api.Session) error {
	var req createContextRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	lang, err := contextLanguage(req.Language)
	if err != nil {
		return err
	}
	cwd := ""
	if req.Cwd != "" {
		if cwd, err = g.cwdOf(s, req.Cwd); err != nil {
			return err
		}
	}
	c, err := g.o.Daemon.CreateContext(r.Context(), s.ID, api.CreateContextRequest{Language: lang, Cwd: cwd})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, e2bContext(*c))
	return nil
}

// contextRoute is the handler of DELETE /contexts/{id} and POST
// /contexts/{id}/restart, nil for another path.
func (g *Gateway) contextRoute(method, path string) sandboxHandler {
	rest, ok := strings.CutPrefix(path, "/contexts/")
	if !ok || rest == "" {
		return nil
	}
	id, restart := strings.CutSuffix(rest, "/restart")
	if strings.Contains(id, "/") || id == "" {
		return nil
	}
	switch {
	case method == "DELETE" && !restart:
		return func(w http.ResponseWriter, r *http.Request, s *api.Session) error {
			if id == pythonContext || id == bashContext {
				return errorf(http.StatusBadRequest, "context %s is a default context: it cannot be removed", id)
			}
			if err := g.o.Daemon.DeleteContext(r.Context(), s.ID, id); err != nil {
				return err
			}
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
	case method == "POST" && restart:
		return func(w http.ResponseWriter, r *http.Request, s *api.Session) error {
			switch id {
			case bashContext:
				// No interpreter: nothing to start afresh.
			case pythonContext:
				id = api.ContextDefault
				fallthrough
			default:
				if _, err := g.o.Daemon.RestartContext(r.Context(), s.ID, id); err != nil {
					return err
				}
			}
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
	}
	return nil
}

// execContext is the sandboxd context and language of an execution that
// names E2B context cid (default: lang's default context).
func (g *Gateway) execContext(ctx context.Context, sid, cid, lang string) (string, string, error) {
	switch cid {
	case "", pythonContext, bashContext, javascriptContext:
		switch cid {
		case bashContext:
			lang = api.LanguageShell
		case javascriptContext:
			lang = api.LanguageJavaScript
		}
		return "", lang, nil
	}
	cs, err := g.o.Daemon.Contexts(ctx, sid)
	if err != nil {
		return "", "", err
	}
	for _, c := range cs {
		if c.ID == cid {
			return cid, c.Language, nil
		}
	}
	return "", "", errorf(http.StatusNotFound, "context %s not found", api.Quote(cid))
}
