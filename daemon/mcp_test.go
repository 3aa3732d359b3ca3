package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

// TestMCPServersGrant: a session granted MCP servers keeps them in its
// record, gets its gateway's folder bound (never from the pool, whose
// sandboxes bind none), and its folder goes with it; an unknown server is
// refused and makes nothing.
func TestMCPServersGrant(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.PoolSize = 1
		c.MCP = config.MCP{Servers: map[string]config.MCPServer{
			"tools": {Command: []string{"/bin/true"}, Tools: []string{"echo"}},
		}}
	})
	d := e.start()
	waitPool(t, d, 1)
	pooled := e.h.ids()[0]

	_, err := d.CreateSession(root, &api.CreateSessionRequest{MCPServers: []string{"nope"}})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), `unknown MCP server "nope": this daemon has tools`) {
		t.Fatalf("an unknown server: %v", err)
	}
	s, err := d.CreateSession(root, &api.CreateSessionRequest{MCPServers: []string{"tools"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID == pooled || strings.Join(s.MCPServers, ",") != "tools" {
		t.Fatalf("session %+v (pooled sandbox %s)", s, pooled)
	}
	spec, _ := e.h.specOf(s.ID)
	dir := d.gateway.Dir(s.ID, s.MCPServers)
	if spec.Gateway != dir {
		t.Errorf("the sandbox binds %q, want %q", spec.Gateway, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, api.MCPGatewaySocket)); err != nil {
		t.Errorf("the gateway's socket: %v", err)
	}
	if got, _ := d.GetSession(root, s.ID); strings.Join(got.MCPServers, ",") != "tools" {
		t.Errorf("GET: %+v", got)
	}
	if info, _ := d.Info(root); len(info.MCPServers) != 1 || info.MCPServers[0].Name != "tools" || info.MCPServers[0].Tools[0].Name != "echo" {
		t.Errorf("info: %+v", info.MCPServers)
	}
	// A plain session still takes the pooled sandbox, binding nothing.
	plain := mustCreate(t, d, root)
	if plain.ID != pooled {
		t.Errorf("a plain session did not take the pooled sandbox: %+v", plain)
	}
	// Stopped, the gateway's socket goes; started, it comes back.
	if _, err := d.StopSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, api.MCPGatewaySocket)); !os.IsNotExist(err) {
		t.Errorf("a stopped session's socket: %v", err)
	}
	if _, err := d.StartSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, api.MCPGatewaySocket)); err != nil {
		t.Errorf("a started session's socket: %v", err)
	}
	if err := d.DeleteSession(root, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a deleted session's gateway folder: %v", err)
	}
}
