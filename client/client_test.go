package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func answer(status int, ctype, body string) roundTripper {
	return func(*http.Request) (*http.Response, error) {
		h := http.Header{}
		h.Set("Content-Type", ctype)
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
	}
}

func TestErrorsKeepTheirClass(t *testing.T) {
	cases := []struct {
		status int
		body   string
		is     func(error) bool
		msg    string
	}{
		{404, `{"error":{"code":"not_found","message":"no such session: x"}}`, errdefs.IsNotFound, "no such session: x"},
		{409, `{"error":{"code":"conflict","message":"stopped"}}`, errdefs.IsConflict, "stopped"},
		{429, `{"error":{"code":"resource_exhausted","message":"full"}}`, errdefs.IsResourceExhausted, "full"},
		{502, `<html>proxy</html>`, func(error) bool { return true }, "<html>proxy</html>"},
	}
	for _, c := range cases {
		cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: answer(c.status, "application/json", c.body)})
		_, err := cl.GetSession(context.Background(), "x")
		if err == nil || !c.is(err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%d: %v", c.status, err)
		}
	}
}

func TestConnectionErrorIsOneSentence(t *testing.T) {
	cl := New("/nonexistent/sandboxd.sock")
	err := cl.Health(context.Background())
	if !errdefs.IsUnavailable(err) || err.Error() != "cannot connect to sandboxd at /nonexistent/sandboxd.sock: is it running?" {
		t.Fatalf("%v", err)
	}
}

func TestStreamWithoutDone(t *testing.T) {
	cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: answer(200, "application/x-ndjson", `{"type":"stdout","data":"a"}`+"\n")})
	var got string
	_, err := cl.Exec(context.Background(), "s", nil, func(ev api.Event) { got += ev.Data })
	if err == nil || got != "a" {
		t.Fatalf("a stream cut short is an error: %v %q", err, got)
	}
	cl = NewWithHTTPClient("/x.sock", &http.Client{Transport: answer(200, "application/x-ndjson", `{"type":"error","error":{"code":"not_found","message":"gone"}}`+"\n")})
	if _, err := cl.Exec(context.Background(), "s", nil, func(api.Event) {}); !errdefs.IsNotFound(err) {
		t.Fatalf("error event: %v", err)
	}
	cl = NewWithHTTPClient("/x.sock", &http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) { return nil, errors.New("boom") })})
	if err := cl.Health(context.Background()); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("transport error: %v", err)
	}
}

// TestNode: GET /v1/node, decoded into api.Node; an error keeps its
// class.
func TestNode(t *testing.T) {
	body := `{"node_id":"n1","hostname":"h","version":"v","state":"ready","labels":{"zone":"a"},
		"capacity":{"memory_mb":2048,"cpus":4,"sessions":200},"allocated":{"memory_mb":512,"cpus":0.5,"sessions":1},
		"sessions_by_status":{"running":1,"paused":0,"stopped":2,"failed":0},
		"pools":{"python":{"ready":1,"target":2}},"templates":["python"],"runtimes":["runc"]}`
	var asked string
	cl := NewWithHTTPClient("/x.sock", &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		asked = r.Method + " " + r.URL.Path
		return answer(200, "application/json", body)(r)
	})})
	n, err := cl.Node(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if asked != "GET /v1/node" {
		t.Errorf("asked %s", asked)
	}
	want := api.Node{NodeID: "n1", Hostname: "h", Version: "v", State: api.NodeReady, Labels: map[string]string{"zone": "a"},
		Capacity: api.NodeResources{MemoryMB: 2048, CPUs: 4, Sessions: 200}, Allocated: api.NodeResources{MemoryMB: 512, CPUs: 0.5, Sessions: 1},
		SessionsByStatus: api.NodeSessions{Running: 1, Stopped: 2}, Pools: map[string]api.NodePool{"python": {Ready: 1, Target: 2}},
		Templates: []string{"python"}, Runtimes: []string{"runc"}}
	if !reflect.DeepEqual(*n, want) {
		t.Errorf("got %+v\nwant %+v", *n, want)
	}
	cl = NewWithHTTPClient("/x.sock", &http.Client{Transport: answer(503, "application/json", `{"error":{"code":"unavailable","message":"shutting down"}}`)})
	if _, err := cl.Node(context.Background()); !errdefs.IsUnavailable(err) {
		t.Errorf("503: %v", err)
	}
}
