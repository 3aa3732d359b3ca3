package client

import (
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"

	"github.com/sandboxd/sandboxd/api"
)

// PortProxy is an http.Handler that forwards every request it serves
// (WebSocket upgrades included) to TCP port inside the session's sandbox,
// through the daemon: what sandboxctl port serves on a local address.
func (c *Client) PortProxy(id string, port int) http.Handler {
	prefix := sessionPath(id, "/ports/"+strconv.Itoa(port))
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "sandboxd"
			pr.Out.URL.Path = prefix + pr.In.URL.Path
			pr.Out.URL.RawPath = prefix + pr.In.URL.EscapedPath()
			pr.Out.Host = "sandboxd"
			for from, to := range map[string]string{"Origin": api.ProxiedOriginHeader, "Referer": api.ProxiedRefererHeader} {
				if v := pr.In.Header.Get(from); v != "" {
					pr.Out.Header.Set(to, v)
				}
				pr.Out.Header.Del(from)
			}
			if !strings.HasPrefix(pr.Out.URL.Path, "/") {
				pr.Out.URL.Path = "/" + pr.Out.URL.Path
			}
		},
		Transport:     c.hc.Transport,
		FlushInterval: -1,
	}
}
