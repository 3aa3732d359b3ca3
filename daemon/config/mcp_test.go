package config

import (
	"strings"
	"testing"
)

func TestMCPValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  MCPServer
		want string // in the error; "" for none
	}{
		{"command", MCPServer{Command: []string{"/bin/true"}, Tools: []string{"a"}}, ""},
		{"url", MCPServer{URL: "https://tools.example/mcp", Tools: []string{"*"}}, ""},
		{"neither", MCPServer{Tools: []string{"a"}}, "set command"},
		{"both", MCPServer{Command: []string{"x"}, URL: "http://x/", Tools: []string{"a"}}, "not both"},
		{"no tools", MCPServer{Command: []string{"x"}}, "list the tools"},
		{"star and more", MCPServer{Command: []string{"x"}, Tools: []string{"*", "a"}}, `"*" alone`},
		{"empty tool", MCPServer{Command: []string{"x"}, Tools: []string{""}}, `"*" alone`},
		{"bad url", MCPServer{URL: "ftp://x/", Tools: []string{"a"}}, "not an http"},
		{"env with url", MCPServer{URL: "http://x/", Env: map[string]string{"A": "b"}, Tools: []string{"a"}}, "for a command"},
		{"negative timeout", MCPServer{Command: []string{"x"}, Tools: []string{"a"}, TimeoutS: -1}, "0 (the default) or more"},
		{"unknown user", MCPServer{Command: []string{"x"}, Tools: []string{"a"}, User: "no-such-user-here"}, "user:"},
		{"user by uid", MCPServer{Command: []string{"x"}, Tools: []string{"a"}, User: "65534"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := MCP{Servers: map[string]MCPServer{"s": tc.srv}}.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "mcp.servers.s:") {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
	if err := (MCP{Servers: map[string]MCPServer{"a b": {Command: []string{"x"}, Tools: []string{"a"}}}}).Validate(); err == nil {
		t.Error("a name with a space passed")
	}
}

func TestMCPCheck(t *testing.T) {
	c := MCP{Servers: map[string]MCPServer{"a": {}, "b": {}}}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"a", "b"}, ""},
		{[]string{"c"}, `unknown MCP server "c": this daemon has a, b`},
		{[]string{"a", "a"}, "named twice"},
	} {
		err := c.Check(tc.names)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: %v, want %q", tc.names, err, tc.want)
		}
	}
	if err := (MCP{}).Check([]string{"a"}); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Errorf("no servers: %v", err)
	}
}
