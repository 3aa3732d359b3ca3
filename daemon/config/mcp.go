package config

import (
	"errors"
	"fmt"
	"net/url"
	"os/user"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults of an MCP server's timeout_s and max_bytes.
const (
	MCPDefaultTimeout  = 30 * time.Second
	MCPDefaultMaxBytes = 1 << 20
)

// MCPAllTools in an MCP server's tools allows every tool it has.
const MCPAllTools = "*"

// MCP is the [mcp] section: the host's MCP servers that sessions may be
// granted (package daemon/mcpgateway calls them).
type MCP struct {
	Servers map[string]MCPServer `toml:"servers"`
}

// MCPServer is one [mcp.servers.NAME]: a command to start (spoken to over
// its stdin and stdout) or the URL of a streamable HTTP endpoint, and the
// tools a session may call on it.
type MCPServer struct {
	Command []string `toml:"command"`
	URL     string   `toml:"url"`
	// Env is the command's whole environment beside PATH (it gets none of
	// the daemon's); User runs it as another user (name or uid), else it
	// runs as the gateway's default user (mcpgateway.DefaultUID).
	Env  map[string]string `toml:"env"`
	User string            `toml:"user"`
	// Tools are the tools a session may call ("*": all).
	Tools    []string `toml:"tools"`
	TimeoutS float64  `toml:"timeout_s"`
	MaxBytes int64    `toml:"max_bytes"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Validate says everything wrong with the section, one sentence each.
func (c MCP) Validate() error {
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
			if t == "" || (t == MCPAllTools && len(s.Tools) > 1) {
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
func (c MCP) Names() []string {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Check says whether a session may be granted names: each must be
// configured, and named once.
func (c MCP) Check(names []string) error {
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

// Allows says whether the server lets a session call tool.
func (s MCPServer) Allows(tool string) bool {
	return slices.Contains(s.Tools, MCPAllTools) || slices.Contains(s.Tools, tool)
}

// Timeout is timeout_s, or its default.
func (s MCPServer) Timeout() time.Duration {
	if s.TimeoutS == 0 {
		return MCPDefaultTimeout
	}
	return time.Duration(s.TimeoutS * float64(time.Second))
}

// AnswerMax is max_bytes, or its default.
func (s MCPServer) AnswerMax() int64 {
	if s.MaxBytes == 0 {
		return MCPDefaultMaxBytes
	}
	return s.MaxBytes
}

// LookupUser resolves the server's user (a name or uid) to its uid and
// primary gid: the config's check and the gateway's start read it alike.
func (s MCPServer) LookupUser() (uid, gid uint32, err error) {
	return lookupUser(s.User)
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
