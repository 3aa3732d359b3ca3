package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// statusWriter remembers the status a handler answered, for the request
// metrics. It must not hide what the writer under it can do: the port
// proxy and upgraded connections hijack, streams flush (both through
// http.ResponseController, which finds them here or through Unwrap), and
// file downloads use io.ReaderFrom (sendfile).
type statusWriter struct {
	http.ResponseWriter
	// status is the final status sent (0: none yet); a hijacked
	// connection counts as 101 Switching Protocols unless one was sent.
	status int
}

var (
	_ http.Flusher  = (*statusWriter)(nil)
	_ http.Hijacker = (*statusWriter)(nil)
	_ io.ReaderFrom = (*statusWriter)(nil)
)

func (w *statusWriter) WriteHeader(code int) {
	// 1xx answers but 101 are informational: the final one follows.
	if w.status == 0 && (code < 100 || code > 199 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.sent()
	return w.ResponseWriter.Write(b)
}

// ReadFrom keeps the server's sendfile path: io.Copy finds the
// ReaderFrom of the writer underneath.
func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	w.sent()
	return io.Copy(w.ResponseWriter, r)
}

func (w *statusWriter) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController calls first.
func (w *statusWriter) FlushError() error {
	w.sent()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

// Unwrap lets http.ResponseController reach the rest (deadlines, full
// duplex).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sent notes the implicit 200 of a body or flush with no status before.
func (w *statusWriter) sent() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
}
