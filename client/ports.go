package client

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

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

// UpgradePort opens a byte stream to the server on TCP port inside the
// session's sandbox, through the daemon's port proxy: an HTTP/1.1 request
// for path with "Upgrade: protocol", which that server must accept with
// 101 Switching Protocols. The stream is the connection after the 101;
// the caller closes it.
func (c *Client) UpgradePort(ctx context.Context, id string, port int, path, protocol string) (net.Conn, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://sandboxd"+sessionPath(id, "/ports/"+strconv.Itoa(port)+path), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Upgrade", protocol)
	return c.upgrade(ctx, req, fmt.Sprintf("port %d of session %s", port, id), func(resp *http.Response) error {
		if resp.StatusCode >= 400 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			return failure(resp)
		}
		return fmt.Errorf("the server on port %d of session %s answered %s, not a switch to %s", port, id, resp.Status, protocol)
	})
}

// upgrade sends req (its Upgrade header set) on a connection of its own
// and returns the connection once the answer is 101 Switching Protocols;
// refused turns another answer into the error. ctx bounds the handshake,
// not the stream; what names the far end in errors. The caller closes the
// stream.
func (c *Client) upgrade(ctx context.Context, req *http.Request, what string, refused func(*http.Response) error) (*bufferedConn, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, c.connError(err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req.Header.Set("Connection", "Upgrade")
	br := bufio.NewReader(conn)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, c.connError(err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		defer resp.Body.Close()
		return nil, refused(resp)
	}
	if !stop() && ctx.Err() != nil {
		conn.Close()
		return nil, ctx.Err()
	}
	return &bufferedConn{Conn: conn, r: br}, nil
}

// bufferedConn reads what the handshake's reader holds before the rest.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite half-closes the stream, for a caller whose input ended.
func (b *bufferedConn) CloseWrite() error {
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
