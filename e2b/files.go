package e2b

import (
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// envd's file transfer (port 49983): GET /files reads a file, POST /files
// writes one (a raw body) or several (multipart, each part's file name its
// path). Sandboxd's files live under /workspace and /tmp; E2B's SDKs
// name the user's home, /home/user, and paths relative to it, which the
// gateway maps to /workspace and back.

// home is E2B's user's home: the sandbox's /workspace, which the
// gateway's template shows at /home/user too (template.go).
const home = "/home/user"

// writeInfo is one file written, as envd answers it.
type writeInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
	// Metadata is what the write gave the file (X-Metadata-* headers).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// metaHeaderPrefix starts the headers of an upload's file metadata
// (envd 0.6.2): X-Metadata-Author: ada is author=ada, keys lower-cased as
// envd's; the daemon keeps it as it keeps its own X-Sandboxd-Meta-*.
const metaHeaderPrefix = "X-Metadata-"

// toSandbox is E2B path p as sandboxd names it.
func toSandbox(p string) (string, error) {
	if p == "" {
		return "", errdefs.ErrInvalidArgument.WithMessage("path is required")
	}
	if !strings.HasPrefix(p, "/") {
		p = path.Join(home, p)
	}
	p = path.Clean(p)
	if p == home || strings.HasPrefix(p, home+"/") {
		return "/workspace" + strings.TrimPrefix(p, home), nil
	}
	return p, nil
}

// fromSandbox is sandboxd path p as E2B's SDKs name it.
func fromSandbox(p string) string {
	if p == "/workspace" || strings.HasPrefix(p, "/workspace/") {
		return home + strings.TrimPrefix(p, "/workspace")
	}
	return p
}

// readFile is GET /files?path=: the file's bytes.
func (g *Gateway) readFile(w http.ResponseWriter, r *http.Request, s *api.Session) error {
	p, err := toSandbox(r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	body, list, err := g.o.Daemon.GetFile(r.Context(), s.ID, p)
	if err != nil {
		return err
	}
	if list != nil {
		return errdefs.ErrInvalidArgument.WithMessage("path " + api.Quote(fromSandbox(p)) + " is a directory")
	}
	defer body.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": path.Base(p)}))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, body)
	return nil
}

// writeFiles is POST /files: a raw body to ?path=, or multipart parts,
// each to ?path= when there is one, else to its file name.
func (g *Gateway) writeFiles(w http.ResponseWriter, r *http.Request, s *api.Session) error {
	var out []writeInfo
	meta := api.MetaFromHeader(r.Header, metaHeaderPrefix)
	put := func(p string, body io.Reader) error {
		sp, err := toSandbox(p)
		if err != nil {
			return err
		}
		if _, err := g.o.Daemon.PutFileMeta(r.Context(), s.ID, sp, body, meta); err != nil {
			return err
		}
		out = append(out, writeInfo{Name: path.Base(sp), Type: "file", Path: fromSandbox(sp), Metadata: meta})
		return nil
	}
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return errdefs.ErrInvalidArgument.WithMessage("the body is not gzip: " + err.Error())
		}
		defer zr.Close()
		body = zr
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		if err := put(r.URL.Query().Get("path"), body); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return errdefs.ErrInvalidArgument.WithMessage("the body is not multipart form data: " + err.Error())
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errdefs.ErrInvalidArgument.WithMessage("a part of the form: " + err.Error())
		}
		// ?path= wins, as envd's: an uploadUrl's form names the file
		// as it was on the uploader's disk. Else the file name is the
		// path (Part.FileName would keep its last element alone).
		p := r.URL.Query().Get("path")
		if p == "" {
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			p = params["filename"]
		}
		err = put(p, part)
		part.Close()
		if err != nil {
			return err
		}
	}
	if len(out) == 0 {
		return errdefs.ErrInvalidArgument.WithMessage("the form has no file")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
