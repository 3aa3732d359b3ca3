package testutil

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// Sessions are n sessions as a daemon lists idle ones (make bench's
// list of 1000): default limits, no network, a label each. The JSON
// benchmarks of the daemon's answers and the client's decode use them.
func Sessions(n int) []api.Session {
	at := time.Date(2026, 12, 1, 4, 5, 6, 789012345, time.UTC)
	l := make([]api.Session, n)
	for i := range l {
		l[i] = api.Session{
			ID: fmt.Sprintf("%016x", 0x5eed0000+i), OwnerUID: 1000, Template: "python", Status: "running",
			CreatedAt: at.Add(time.Duration(i) * time.Millisecond), LastUsedAt: at.Add(time.Duration(i) * time.Second),
			Limits:  api.Limits{MemoryMB: 512, CPUs: 1, Pids: 256, DiskMB: 16, TimeoutS: 300, IdleTimeoutS: 900},
			Network: "none", Labels: map[string]string{"bench": "list"}, Runtime: api.RuntimeRunc,
		}
	}
	return l
}

// fullSession is a session with every optional field set, its strings
// full of what JSON escapes (HTML, U+2028, quotes, control characters,
// invalid UTF-8): one of Answers.
func fullSession() api.Session {
	s := Sessions(1)[0]
	deadline := time.Date(2026, 12, 1, 5, 0, 0, 1, time.FixedZone("X", 3600))
	s.Name, s.Reason, s.Deadline = "é<script>&\u2028", "a \"quoted\"\n\treason \xff", &deadline
	s.Allow, s.MCPServers = []string{"*.example.org:443", "198.18.0.0/15"}, []string{}
	s.Volumes = []api.VolumeMount{{Name: "v", Path: "/data", ReadOnly: true}}
	s.Limits.CPUs = 0.1 + 0.2
	s.Checkpoints, s.EgressKbps = 3, 1000
	return s
}

// fullExecution is an execution with every optional field set, as
// fullSession.
func fullExecution() api.Execution {
	result, uid := "<b>&\u2028 \xff", uint32(0)
	return api.Execution{ID: "e", Result: &result, StartedAt: time.Unix(0, 0).UTC(), DurationMS: 1e21, CallerUID: &uid,
		Error:   &api.ExecError{Name: "E", Value: "v", Traceback: "t"},
		Outputs: []api.Output{{MIME: "image/png", Data: "AA=="}}}
}

// Answer is a value of the API's answers, named for a test's case.
type Answer struct {
	Name  string
	Value any
}

// Answers are the kinds of value the daemon answers with, each field kind
// the API has among them (times, pointers, embedded structs, raw JSON,
// maps, empty and nil lists): what the tests of the daemon's encoder and
// the client's decoder go through.
func Answers() []Answer {
	return []Answer{
		{"a full session", fullSession()},
		{"a list", api.SessionList{Sessions: Sessions(3)}},
		{"an empty list", api.SessionList{}},
		{"an error", api.ErrorBody{Error: api.ErrorDetail{Code: "not_found", Message: "no such session: <x>"}}},
		{"an embedded struct", api.FolderMade{FileStat: api.FileStat{Path: "/w", Size: 3}, Created: true}},
		{"an execution", fullExecution()},
		{"raw JSON", api.MCPAnswer{OK: true, Result: json.RawMessage(`{"a": [1, 2.50, "<"]}`)}},
		{"a map", map[string]any{"b": math.Copysign(0, -1), "a": 1e-7, "<": nil, "z": []any{}, "l": []any{"x", true}}},
	}
}
