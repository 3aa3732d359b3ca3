package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
)

// ports proxies a request (WebSocket upgrades included) to a TCP port
// inside a session's sandbox: /v1/sessions/{id}/ports/{port}/{path…}.
func (s *Server) ports(w http.ResponseWriter, r *http.Request) error {
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil {
		return api.Errorf(errdefs.ErrInvalidArgument, "port %s is not a number between 1 and 65535", api.Quote(r.PathValue("port")))
	}
	id := r.PathValue("id")
	dial, err := s.b.PortDialer(r.Context(), id, port)
	if err != nil {
		return err
	}
	prefix := fmt.Sprintf("/v1/sessions/%s/ports/%d", id, port)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			path := strings.TrimPrefix(pr.In.URL.EscapedPath(), prefix)
			if !strings.HasPrefix(path, "/") {
				path = "/" + path
			}
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", net.JoinHostPort("localhost", strconv.Itoa(port))
			pr.Out.URL.RawPath = path
			pr.Out.URL.Path, _ = url.PathUnescape(path)
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			// Development servers check Host: the sandbox's server is local.
			pr.Out.Host = pr.Out.URL.Host
			pr.SetXForwarded()
			for from, to := range map[string]string{api.ProxiedOriginHeader: "Origin", api.ProxiedRefererHeader: "Referer"} {
				if v := pr.In.Header.Get(from); v != "" {
					pr.Out.Header.Set(to, v)
				}
				pr.Out.Header.Del(from)
			}
		},
		Transport: &http.Transport{
			DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
			DisableKeepAlives: true, // no connection outlives its request, nor its sandbox
		},
		FlushInterval: -1, // as it comes: server-sent events, streams
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return // the caller left
			}
			if !api.IsBadGateway(err) {
				logging.From(r.Context()).Info("port proxy", "session", id, "port", port, "err", err)
				err = api.Errorf(api.ErrBadGateway, "the server on port %d in session %s did not answer: %v", port, id, err)
			}
			writeError(w, r, err)
		},
	}
	rp.ServeHTTP(w, r)
	return nil
}
