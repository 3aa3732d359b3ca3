package mcpgateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string // the op, or a part of the error
	}{
		{`{"op":"list"}`, api.MCPOpList},
		{`{"server":"s","tool":"t"}`, api.MCPOpCall},
		{`{"server":"s","tool":"t","arguments":null}`, api.MCPOpCall},
		{`{"server":"s","tool":"t","arguments":{"a":1}}`, api.MCPOpCall},
		{`{"server":"s"}`, "names its server and tool"},
		{`{"server":"s","tool":"t","arguments":"x"}`, "a JSON object"},
		{`{"server":"s","tool":"t","timeout_s":-1}`, "0 or more"},
		{`{"op":"x"}`, "unknown op"},
		{`{"server":"s","tool":"t"} {}`, "more follows"},
		{`[]`, "one JSON object"},
		{``, "one JSON object"},
	} {
		req, err := DecodeRequest([]byte(tc.line))
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = req.Op
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestReadLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("x", 40)+"\nend"), 16)
	if l, err := readLine(r, 32); err != nil || string(l) != "short" {
		t.Fatalf("%q %v", l, err)
	}
	if _, err := readLine(r, 32); !errors.Is(err, errLineTooLong) {
		t.Fatalf("a 40-byte line under a 32-byte cap: %v", err)
	}
}

// FuzzDecodeRequest feeds the decoder what code in a sandbox could send:
// it never panics, and what it accepts is a call with a server, a tool
// and object arguments, or a list.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{`{"op":"list"}`, `{"server":"s","tool":"t","arguments":{"a":[1,2]}}`, `{"server":"s","tool":"t","timeout_s":1e400}`, `{"op":"call","arguments":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := DecodeRequest(line)
		if err != nil {
			return
		}
		switch req.Op {
		case api.MCPOpList:
		case api.MCPOpCall:
			if req.Server == "" || req.Tool == "" || req.TimeoutS < 0 {
				t.Fatalf("accepted %q as %+v", line, req)
			}
			if req.Arguments != nil {
				var m map[string]any
				if err := json.Unmarshal(req.Arguments, &m); err != nil {
					t.Fatalf("accepted arguments %s: %v", req.Arguments, err)
				}
			}
		default:
			t.Fatalf("accepted op %q", req.Op)
		}
	})
}
