package main

import (
	"os"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

func TestPrintFormatted(t *testing.T) {
	list := []api.Session{
		{ID: "a1", Status: api.StatusRunning, Labels: map[string]string{"agent": "x"}, Limits: api.Limits{MemoryMB: 512}},
		{ID: "b2", Status: api.StatusPaused, MCPServers: []string{"s1", "s2"}},
	}
	for _, tc := range []struct {
		format, want, err string
	}{
		{"{{.ID}} {{.Status}}", "a1 running\nb2 paused\n", ""},
		{"{{.ID}} {{.Limits.MemoryMB}} {{index .Labels \"agent\"}}", "a1 512 x\nb2 0 \n", ""},
		{"{{upper .Status}} {{join .MCPServers \",\"}}", "RUNNING \nPAUSED s1,s2\n", ""},
		{"{{json .Labels}}", "{\"agent\":\"x\"}\nnull\n", ""},
		{"json", `{"id":"a1"`, ""},
		{"{{.Nope}}", "", "bad --format"},
		{"{{.ID", "", "bad --format"},
	} {
		var b strings.Builder
		err := printFormatted(&b, tc.format, list)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.format, err, tc.err)
			}
			continue
		}
		if err != nil || !strings.Contains(b.String(), tc.want) {
			t.Errorf("%q: %q %v, want %q", tc.format, b.String(), err, tc.want)
		}
	}
}

func TestSessionFilters(t *testing.T) {
	list := []api.Session{
		{ID: "a1", Status: api.StatusRunning, Runtime: "runc", Labels: map[string]string{"agent": "x"}},
		{ID: "a2", Status: api.StatusPaused, Runtime: "runsc"},
		{ID: "b3", Status: api.StatusStopped, Runtime: "runc", Labels: map[string]string{"agent": "y"}},
	}
	ids := func(ss []api.Session) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		filters []string
		want    string // ids kept, or the error
		labels  string // what goes to the daemon
	}{
		{nil, "a1,a2,b3", ""},
		{[]string{"status=running"}, "a1", ""},
		{[]string{"status=running", "status=paused"}, "a1,a2", ""},
		{[]string{"status=running", "runtime=runsc"}, "", ""},
		{[]string{"id=a"}, "a1,a2", ""},
		{[]string{"label=agent"}, "a1,b3", ""},
		{[]string{"label=agent=x"}, "a1,a2,b3", "agent=x"}, // the daemon filters labels with values
		{[]string{"colour=red"}, "bad --filter", ""},
		{[]string{"status"}, "bad --filter", ""},
	} {
		f, err := parseSessionFilters(tc.filters)
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v", tc.filters, err)
			}
			continue
		}
		if got := ids(f.apply(list)); got != tc.want {
			t.Errorf("%v: kept %q, want %q", tc.filters, got, tc.want)
		}
		var ls []string
		for k, v := range f.labels {
			ls = append(ls, k+"="+v)
		}
		if got := strings.Join(ls, ","); got != tc.labels {
			t.Errorf("%v: labels %q, want %q", tc.filters, got, tc.labels)
		}
	}
}

func TestEnded(t *testing.T) {
	for _, tc := range []struct {
		status, reason, want string
		ok, done             bool
	}{
		{api.StatusRunning, "", "", false, false},
		{api.StatusPaused, "paused by request", "", false, false},
		{api.StatusStopped, "idle timeout", "stopped: idle timeout", true, true},
		{api.StatusStopped, "", "stopped", true, true},
		{api.StatusFailed, "out of memory", "failed: out of memory", false, true},
	} {
		got, ok, done := ended(tc.status, tc.reason)
		if got != tc.want || ok != tc.ok || done != tc.done {
			t.Errorf("%s %q: %q %v %v", tc.status, tc.reason, got, ok, done)
		}
	}
}

func TestConfirm(t *testing.T) {
	for in, want := range map[string]bool{"y\n": true, "YES\n": true, "n\n": false, "\n": false, "": false} {
		var w strings.Builder
		if got := confirm(strings.NewReader(in), &w, "sure? "); got != want || w.String() != "sure? " {
			t.Errorf("%q: %v (%q)", in, got, w.String())
		}
	}
}

func TestExecSource(t *testing.T) {
	file := t.TempDir() + "/s.py"
	if err := os.WriteFile(file, []byte("print(1)"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		code, file string
		shell      bool
		argv       []string
		lang, want string // or the error
	}{
		{code: "x = 1", lang: api.LanguagePython, want: "x = 1"},
		{code: "ls", shell: true, lang: api.LanguageShell, want: "ls"},
		{file: file, lang: api.LanguagePython, want: "print(1)"},
		{argv: []string{"ls", "-la"}, lang: api.LanguageShell, want: "exec 'ls' '-la'"},
		{argv: []string{"printf", "%s", "it's", "$HOME"}, lang: api.LanguageShell, want: `exec 'printf' '%s' 'it'\''s' '$HOME'`},
		{code: "1", argv: []string{"ls"}, want: "give one of"},
		{code: "1", file: file, want: "give one of"},
		{shell: true, argv: []string{"ls"}, want: "--shell runs -c"},
		{want: "no code given"},
		{file: "/nonexistent/x.py", want: "cannot read"},
	} {
		f := codeFlags{code: tc.code, shell: tc.shell}
		lang, code, err := f.execSource(tc.file, tc.argv)
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) || tc.lang != "" {
				t.Errorf("%+v: %v", tc, err)
			}
			continue
		}
		if lang != tc.lang || code != tc.want {
			t.Errorf("%+v: %s %q", tc, lang, code)
		}
	}
}

func TestPrintStatMetadata(t *testing.T) {
	var b strings.Builder
	st := &api.FileStat{Path: "/workspace/a", Permissions: "-rw-r--r--", Owner: "sandbox", Group: "sandbox", Size: 1,
		Metadata: map[string]string{"purpose": "a test", "author": "ada"}}
	if err := printStat(&b, st, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || lines[1] != `  author="ada"` || lines[2] != `  purpose="a test"` {
		t.Fatalf("%q", b.String())
	}
}
