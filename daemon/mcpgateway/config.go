// Package mcpgateway lets code in a sandbox call the host's MCP servers,
// and nothing else of the host: each session granted servers gets a Unix
// socket of its own, bound into its sandbox, on which the gateway takes
// one request a line (api.MCPRequest), checks it against the session's
// grant and the server's tool list, and makes the call as an MCP client
// of the server (a process per session and server, or an HTTP endpoint),
// under the server's timeout and answer size cap. Every call is told to
// the daemon (its event, log line and metrics).
package mcpgateway

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults of a server's timeout_s and max_bytes.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultMaxBytes = 1 << 20
)

// AllTools in a server's tools allows every tool it has.
const AllTools = "*"

// Config is the daemon's [mcp] section.
type Config struct {
	Servers map[string]Server `toml:"servers"`
}

// Server is one [mcp.servers.NAME]: a command to start (spoken to over
// its stdin and stdout) or the URL of a streamable HTTP endpoint, and the
// tools a session may call on it.
type Server struct {
	Command []string `toml:"command"`
	URL     string   `toml:"url"`
	// Env is the command's whole environment beside PATH (it gets none of
	// the daemon's); User runs it as another user (name or uid), else it
	// runs as DefaultUID (see credential).
	Env  map[string]string `toml:"env"`
	User string            `toml:"user"`
	// Tools are the tools a session may call ("*": all).
	Tools    []string `toml:"tools"`
	TimeoutS float64  `toml:"timeout_s"`
	MaxBytes int64    `toml:"max_bytes"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Validate says everything wrong with the section, one sentence each.
func (c Config) Validate() error {
	var errs []error
	for _, name := range c.Names() {
		s := c.Servers[name]
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("mcp.servers.%s: "+format, append([]any{name}, a...)...))
		}
		if !nameRE.MatchString(name) {
			bad("a server's name is letters, digits, '_', '.' and '-', up to 64")
		}
		switch {
		case len(s.Command) == 0 && s.URL == "":
			bad("set command (a program spoken to over stdio) or url (a streamable HTTP endpoint)")
		case len(s.Command) > 0 && s.URL != "":
			bad("set command or url, not both")
		case len(s.Command) > 0 && s.Command[0] == "":
			bad("command's first word is the program to run")
		case s.URL != "":
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("url %q is not an http or https URL", s.URL)
			}
			if len(s.Env) > 0 || s.User != "" {
				bad("env and user are for a command")
			}
		}
		if len(s.Tools) == 0 {
			bad(`list the tools a session may call in tools (["*"] for all)`)
		}
		for _, t := range s.Tools {
			if t == "" || (t == AllTools && len(s.Tools) > 1) {
				bad(`tools holds names, or "*" alone`)
				break
			}
		}
		if s.TimeoutS < 0 || s.MaxBytes < 0 {
			bad("timeout_s and max_bytes are 0 (the default) or more")
		}
		if s.User != "" {
			if _, _, err := lookupUser(s.User); err != nil {
				bad("user: %v", err)
			}
		}
	}
	return errors.Join(errs...)
}

// Names are the configured servers' names, sorted.
func (c Config) Names() []string {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Check says whether a session may be granted names: each must be
// configured, and named once.
func (c Config) Check(names []string) error {
	for i, n := range names {
		if _, ok := c.Servers[n]; !ok {
			if len(c.Servers) == 0 {
				return fmt.Errorf("unknown MCP server %q: this daemon has none ([mcp.servers] in its config)", n)
			}
			return fmt.Errorf("unknown MCP server %q: this daemon has %s", n, strings.Join(c.Names(), ", "))
		}
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("MCP server %q is named twice", n)
		}
	}
	return nil
}

// allows says whether the server lets a session call tool.
func (s Server) allows(tool string) bool {
	return slices.Contains(s.Tools, AllTools) || slices.Contains(s.Tools, tool)
}

func (s Server) timeout() time.Duration {
	if s.TimeoutS == 0 {
		return DefaultTimeout
	}
	return time.Duration(s.TimeoutS * float64(time.Second))
}

func (s Server) maxBytes() int64 {
	if s.MaxBytes == 0 {
		return DefaultMaxBytes
	}
	return s.MaxBytes
}

// DefaultUID and DefaultGID are who a command server runs as when its
// config names no user and the daemon is root: 65534, nobody and nogroup
// on Debian and Red Hat (and the kernel's overflow id). A server's tools
// are called for code in sandboxes, so it must not hold the daemon's root
// powers unless the host says so (user = "root"). The packages make no
// user of their own (only the sandboxd group, which may use the daemon's
// socket: a server in it could steer sessions), hence nobody.
const (
	DefaultUID = 65534
	DefaultGID = 65534
)

// credential is who the server's command runs as: its user, else
// DefaultUID when the daemon is root; nil (the daemon's own user, which
// cannot switch) when the daemon is not root and the config names no
// user.
func (s Server) credential() (*syscall.Credential, error) {
	switch {
	case s.User != "":
		uid, gid, err := lookupUser(s.User)
		if err != nil {
			return nil, err
		}
		return &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}, nil
	case os.Geteuid() == 0:
		return &syscall.Credential{Uid: DefaultUID, Gid: DefaultGID, Groups: []uint32{}}, nil
	}
	return nil, nil
}

// lookupUser resolves a user name or uid to its uid and primary gid.
func lookupUser(name string) (uid, gid uint32, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, nerr := strconv.Atoi(name); nerr != nil {
			return 0, 0, err
		}
		if u, err = user.LookupId(name); err != nil {
			return 0, 0, err
		}
	}
	id, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, 0, err
	}
	g, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return 0, 0, err
	}
	return uint32(id), uint32(g), nil
}
