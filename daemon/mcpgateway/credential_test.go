package mcpgateway

import (
	"bufio"
	"log/slog"
	"os"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/daemon/config"
)

// TestServerUser: a command server runs as nobody (65534) unless its
// config names a user, and as that user when it does; a daemon that is
// not root runs it as itself. Checked on the process itself (id -u, id -g).
func TestServerUser(t *testing.T) {
	root := os.Geteuid() == 0
	def, defGID := os.Getuid(), os.Getgid()
	if root {
		def, defGID = DefaultUID, DefaultGID
	}
	cases := []struct {
		name     string
		user     string
		uid, gid int
	}{
		{"no user", "", def, defGID},
	}
	if root {
		// Only root may switch users. daemon:x:1:1 on Debian and Red Hat.
		cases = append(cases, []struct {
			name     string
			user     string
			uid, gid int
		}{
			{"a named user", "1", 1, 1},
			{"root by name", "root", 0, 0},
		}...)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &upstream{name: "id", session: "s", log: slog.New(slog.DiscardHandler),
				srv: config.MCPServer{Command: []string{"/bin/sh", "-c", "id -u; id -g; id -G"}, User: tc.user, Tools: []string{config.MCPAllTools}}}
			tr, cmd, err := u.start()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { endProcess(cmd) })
			sc := bufio.NewScanner(tr.(*mcp.IOTransport).Reader)
			var got []string
			for sc.Scan() {
				got = append(got, sc.Text())
			}
			want := []string{strconv.Itoa(tc.uid), strconv.Itoa(tc.gid), strconv.Itoa(tc.gid)}
			if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || root && got[2] != want[2] {
				t.Fatalf("the server runs as uid, gid, groups %q, want %q", got, want)
			}
		})
	}
}
