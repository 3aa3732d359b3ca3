package store

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenDatabaseOf4f81208 opens a database as the daemon of commit
// 4f81208 (schema 2, records written from the API's types) left it — three
// stopped sessions, one with four executions, and a template — and checks
// everything reads back through the store's own records.
func TestOpenDatabaseOf4f81208(t *testing.T) {
	b, err := os.ReadFile("testdata/sandboxd-4f81208.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sandboxd.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, Options{})
	recs, err := s.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d sessions, want 3", len(recs))
	}
	byID := map[string]*Record{}
	for _, r := range recs {
		byID[r.ID] = r
		// Deadline came later: these have none.
		if r.Status != "stopped" || r.OwnerUID != 0 || r.CreatedAt.IsZero() || r.IDBase == 0 || r.Limits.DiskMB != 1024 || !r.Deadline.IsZero() {
			t.Errorf("session %s: %+v", r.ID, r)
		}
	}
	a := byID["9987dfd1094b662a"]
	if a == nil || a.Labels["agent"] != "a1" || a.Labels["team"] != "x" || a.Limits.MemoryMB != 256 || a.ExecCount != 4 || a.Template != "python" {
		t.Fatalf("session a: %+v", a)
	}
	if b := byID["46e9fee37fec0d38"]; b == nil || b.Limits.CPUs != 0.5 {
		t.Fatalf("session b: %+v", b)
	}
	if c := byID["ce8d8ea000fde673"]; c == nil || c.Template != "data" || c.Limits.MemoryMB != 300 {
		t.Fatalf("session c: %+v", c)
	}
	execs, err := s.Executions(a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(execs) != 4 {
		t.Fatalf("%d executions, want 4", len(execs))
	}
	// Newest first: 1/0, the shell, x, x = 6 * 7.
	if e := execs[0]; e.Status != "error" || e.Error == nil || e.Error.Name != "ZeroDivisionError" {
		t.Errorf("newest: %+v", e)
	}
	if e := execs[1]; e.Language != "shell" || e.ExitCode != 3 || e.Stdout != "hi\n" {
		t.Errorf("shell: %+v", e)
	}
	if e := execs[2]; e.Result == nil || *e.Result != "42" {
		t.Errorf("x: %+v", e)
	}
	tmpls, err := s.Templates()
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpls) != 1 || tmpls[0].Name != "data" || tmpls[0].Preload != "import json" || tmpls[0].Description != "json preloaded" ||
		tmpls[0].Limits == nil || *tmpls[0].Limits.MemoryMB != 300 || tmpls[0].PoolSize == nil || *tmpls[0].PoolSize != 0 {
		t.Fatalf("templates: %+v", tmpls)
	}
	// It keeps working: a write and a read of the new records.
	a.Reason = "read by a newer daemon"
	a.Deadline = time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	if err := s.PutSession(a); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetSession(a.ID); err != nil || got.Reason != a.Reason || !got.Deadline.Equal(a.Deadline) {
		t.Fatalf("%+v %v", got, err)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/record-*.json")

// TestRecordJSON pins the JSON of every record: the database's format. A
// change here is a schema change, and needs a migration (migrations.go)
// and a new schema version; an API field rename must not show here.
func TestRecordJSON(t *testing.T) {
	at := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	n, m, c, r := 2, int64(300), 0.5, "42"
	tests := map[string]any{
		"session": &Record{ID: "s", OwnerUID: 1000, Template: "python", Status: "failed", Reason: "out of memory",
			CreatedAt: at, LastUsedAt: at, ExecCount: 3, Limits: Limits{MemoryMB: 512, CPUs: 1, Pids: 256, DiskMB: 1024, TimeoutS: 30, IdleTimeoutS: 3600},
			Network: "none", Labels: map[string]string{"k": "v"}, Env: []string{"A=1"}, IDBase: 1 << 30},
		"execution": &Execution{ID: "e", SessionID: "s", Language: "python", Status: "error", Stdout: "o", Stderr: "e", ExitCode: 1,
			Result: &r, Error: &ExecError{Name: "N", Value: "V", Traceback: "T"}, Outputs: []Output{{MIME: "image/png", Data: "AA=="}},
			StartedAt: at, DurationMS: 1.5, Truncated: true, StateReset: true},
		"template": &Template{Name: "t", Description: "d", Rootfs: "host", Env: map[string]string{"A": "1"}, Preload: "import json",
			Limits: &LimitDefaults{MemoryMB: &m, CPUs: &c}, PoolSize: &n, OwnerUID: 1000, CreatedAt: at},
		"volume": &Volume{VolumeID: "volume-v", Name: "data", SizeMB: 64, OwnerUID: 1000, CreatedAt: at, SharedWith: []uint32{1001}},
		"snapshot": &Snapshot{SnapshotID: "p", Name: "warm", OwnerUID: 1000, CreatedAt: at, SizeBytes: 4096, Fork: true,
			Session: Record{ID: "s", OwnerUID: 1000, Template: "python", Limits: Limits{MemoryMB: 512}, Network: "none",
				Volumes: []VolumeMount{{Name: "data", OwnerUID: 1000, VolumeID: "volume-v", Path: "/data", ReadOnly: true}}}},
	}
	for name, v := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "record-"+name+".json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got)+"\n" != string(want) {
				t.Fatalf("the %s record's JSON changed: that changes the database; add a schema migration (or run with -update if this is the migration)\ngot:\n%s\nwant:\n%s", name, got, want)
			}
		})
	}
}
