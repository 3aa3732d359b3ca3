package server

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/net/http/httpguts"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// attach starts a process and hands the connection over to its streams:
// the request asks to upgrade to api.AttachUpgrade, and a refusal (bad
// request, no session, a command that cannot start) is an ordinary
// error answer; once started, the answer is 101 and frames follow.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) error {
	if !strings.EqualFold(r.Header.Get("Upgrade"), api.AttachUpgrade) || !httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") {
		return api.Errorf(errdefs.ErrInvalidArgument, "attach upgrades the connection: send Connection: Upgrade and Upgrade: %s", api.AttachUpgrade)
	}
	var req api.AttachRequest
	if err := s.decode(w, r, &req, "argv"); err != nil {
		return err
	}
	serve, err := s.b.Attach(r.Context(), r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		serve(nil)
		return api.Errorf(errdefs.ErrInternal, "the connection cannot be taken over: %v", err)
	}
	// The server's deadlines were for the request, not for a session at
	// a terminal.
	_ = conn.SetDeadline(time.Time{})
	_, err = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + api.AttachUpgrade + "\r\n" +
		api.RequestIDHeader + ": " + requestIDOf(r.Context()) + "\r\n\r\n")
	if err == nil {
		err = brw.Flush()
	}
	if err != nil {
		logging.From(r.Context()).Info("attached client left before the upgrade", "err", err)
		conn.Close()
		serve(nil)
		return nil
	}
	// What the client sent after its request is in brw's reader first.
	serve(&hijacked{Conn: conn, r: brw.Reader})
	return nil
}

// hijacked is a taken-over connection whose reads go through the
// server's buffer first.
type hijacked struct {
	net.Conn
	r *bufio.Reader
}

func (h *hijacked) Read(p []byte) (int, error) { return h.r.Read(p) }
