package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/store"
)

// asMain makes the test binary sandboxd itself (main, its exit status),
// for the tests that run it as a process.
const asMain = "SANDBOXD_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) != "" {
		// What these tests check comes before anything needs root (make
		// test-unit runs them as an ordinary user).
		euid = func() int { return 0 }
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// dataDir is a data dir whose database holds three sessions and has a
// last-good copy, and the flags of a daemon on it that needs no root up
// to opening its database.
func dataDir(t *testing.T) (dir string, args []string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "data")
	path := filepath.Join(dir, "sandboxd.db")
	for range 2 { // the second open copies the sessions to the last-good copy
		s, err := store.Open(path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b", "c"} {
			if err := s.PutSession(&store.Record{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
	cfg := filepath.Join(base, "config.toml")
	if err := os.WriteFile(cfg, []byte("socket_group = \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, []string{"--config", cfg, "--data-dir", dir, "--run-dir", filepath.Join(base, "run"), "--socket", filepath.Join(base, "s.sock")}
}

// breakFreelist puts garbage over the freelist pages both meta pages
// name (bbolt's format: the meta after a 16-byte page header, its page
// size at byte 8 of it, its freelist page id at byte 32) — the damage that made bbolt panic
// with "invalid freelist page" at every start.
func breakFreelist(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := uint64(binary.NativeEndian.Uint32(b[16+8:]))
	for _, meta := range []uint64{0, pageSize} {
		id := binary.NativeEndian.Uint64(b[meta+16+32:])
		copy(b[id*pageSize:(id+1)*pageSize], bytes.Repeat([]byte{0xa5}, int(pageSize)))
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestStartOnCorruptDatabase runs sandboxd on a database whose freelist
// is garbage: it exits 1 with one line that says what is wrong and what
// to run, and no panic.
func TestStartOnCorruptDatabase(t *testing.T) {
	dir, args := dataDir(t)
	path := filepath.Join(dir, "sandboxd.db")
	breakFreelist(t, path)

	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("sandboxd on a corrupt database: %v, want exit status 1\nstderr: %s", err, stderr.String())
	}
	out := stderr.String()
	t.Logf("stderr: %s", out)
	if strings.Count(out, "\n") != 1 || strings.Contains(out, "panic") || stdout.Len() != 0 {
		t.Fatalf("want one line on stderr, got:\n%s\nstdout: %s", out, stdout.String())
	}
	for _, want := range []string{
		"sandboxd: the database " + path + " is corrupted (",
		"run `sandboxd --recover --data-dir " + dir + "`",
		"restore " + store.LastGoodPath(path),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the message lacks %q", want)
		}
	}
}

// execute runs the command in this process.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestRecoverFlag: --recover salvages the database, says so in a few
// lines and exits 0 without starting the daemon; a second run finds
// nothing to do.
func TestRecoverFlag(t *testing.T) {
	dir, args := dataDir(t)
	path := filepath.Join(dir, "sandboxd.db")
	breakFreelist(t, path)
	out, err := execute(t, append(args, "--recover")...)
	if err != nil {
		t.Fatalf("--recover: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	for _, want := range []string{"was corrupted", "salvaged 3 sessions, 0 templates and 0 executions\n", "kept as " + path + ".corrupt-"} {
		if !strings.Contains(out, want) {
			t.Errorf("--recover's report lacks %q", want)
		}
	}
	if n := strings.Count(out, "\n"); n > 5 {
		t.Errorf("--recover's report is %d lines", n)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "s.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--recover made the socket: the daemon started")
	}
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("open after --recover: %v", err)
	}
	all, _ := s.Sessions()
	s.Close()
	if len(all) != 3 {
		t.Fatalf("%d sessions after --recover", len(all))
	}
	if out, err := execute(t, append(args, "--recover")...); err != nil || !strings.Contains(out, "nothing to recover") {
		t.Fatalf("second --recover: %v\n%s", err, out)
	}
}

// TestRecoverFlagRefusesRunningDaemon: the database of a running daemon
// is not recovered.
func TestRecoverFlagRefusesRunningDaemon(t *testing.T) {
	dir, args := dataDir(t)
	s, err := store.Open(filepath.Join(dir, "sandboxd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := execute(t, append(args, "--recover")...); !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("--recover while a daemon runs: %v", err)
	}
}

func TestRecoverAndValidateExclude(t *testing.T) {
	_, args := dataDir(t)
	if _, err := execute(t, append(args, "--recover", "--validate")...); err == nil {
		t.Fatal("--recover with --validate ran")
	}
}

// TestValidateStrictRuntime: --validate refuses a configuration whose
// strict default runtime cannot run here, in the sentence the daemon's
// start would say; without strict_runtime it is valid.
func TestValidateStrictRuntime(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "runsc")
	cases := []struct {
		name, config, want string
	}{
		{"strict", "default_runtime = \"runsc\"\nstrict_runtime = true\n[runsc]\npath = \"" + missing + "\"\n", "strict_runtime is set and the default runtime runsc is not usable: runsc is not installed"},
		{"not strict", "default_runtime = \"runsc\"\n[runsc]\npath = \"" + missing + "\"\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "c.toml")
			if err := os.WriteFile(cfg, []byte(c.config), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := execute(t, "--config", cfg, "--validate")
			if c.want == "" {
				if err != nil {
					t.Fatalf("valid configuration refused: %v %s", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
