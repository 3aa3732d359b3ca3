package integration

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestTemplateUserHome: a template's user (E2B's: "user" at /home/user)
// is who code is, by name, in its sessions, pooled or not, on either
// runtime and after a daemon restart: whoami, HOME and the working folder
// say it, the home is the workspace (a file written there is the files
// API's at /workspace, owned by that name), and processes start there.
func TestTemplateUserHome(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		out, stderr, code := d.ctl(t, "", "template", "add", "e2b", "--user", "user", "--home", "/home/user", "--pool-size", "1", "--json")
		if code != 0 {
			t.Fatalf("template add: %s %d", stderr, code)
		}
		var tmpl api.Template
		if err := json.Unmarshal([]byte(out), &tmpl); err != nil || tmpl.User == nil || *tmpl.User != (api.TemplateUser{Name: "user", Home: "/home/user"}) {
			t.Fatalf("template add answered %q %v", out, err)
		}
		if _, stderr, code := d.ctl(t, "", "template", "add", "bad", "--user", "root"); code == 0 || !strings.Contains(stderr, "user name") {
			t.Fatalf("a template of user root: %d %s", code, stderr)
		}
		waitFor(t, func() bool {
			got, err := d.c.Template(ctx, "e2b")
			return err == nil && got.PoolIdle == 1
		})
		check := func(t *testing.T, when, id string) {
			t.Helper()
			if e := d.sh(t, id, "whoami; echo $HOME; pwd; id -un; getent passwd user | cut -d: -f6-7"); e.Status != api.StatusOK ||
				!strings.HasPrefix(e.Stdout, "user\n/home/user\n/home/user\nuser\n/home/user:/bin") {
				t.Fatalf("%s: who and where: %s", when, describe(e))
			}
			if e := d.py(t, id, "import os, pwd\nopen('/home/user/"+when+".txt', 'w').write('hi')\nos.getcwd(), pwd.getpwuid(os.getuid()).pw_name, open('/workspace/"+when+".txt').read()"); result(e) != "('/home/user', 'user', 'hi')" {
				t.Fatalf("%s: python: %s", when, describe(e))
			}
			st, err := d.c.StatFile(ctx, id, "/workspace/"+when+".txt")
			if err != nil || st.Owner != "user" || st.Group != "user" || st.Size != 2 {
				t.Fatalf("%s: the files API: %+v %v", when, st, err)
			}
			r, _, err := d.c.GetFile(ctx, id, when+".txt")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			r.Close()
			if string(b) != "hi" {
				t.Fatalf("%s: the files API reads %q", when, b)
			}
			p, err := d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: []string{"sh", "-c", "pwd; echo $HOME"}})
			if err != nil {
				t.Fatalf("%s: a process: %v", when, err)
			}
			var logs []byte
			waitFor(t, func() bool {
				r, running, _, err := d.c.ProcessLogs(ctx, id, p.PID, 0)
				if err != nil {
					t.Fatal(err)
				}
				logs, _ = io.ReadAll(r)
				r.Close()
				return !running
			})
			if string(logs) != "/home/user\n/home/user\n" {
				t.Fatalf("%s: a process says %q", when, logs)
			}
			d.sh(t, id, "mkdir -p sub")
			if e := d.exec(t, id, "shell", "pwd", 0); e.Stdout != "/home/user\n" {
				t.Fatalf("%s: default cwd: %s", when, describe(e))
			}
			e, err := d.c.Exec(ctx, id, &api.ExecRequest{Language: api.LanguageShell, Code: "pwd", Cwd: "/home/user/sub"}, nil)
			if err != nil || e.Stdout != "/home/user/sub\n" {
				t.Fatalf("%s: cwd under the home: %+v %v", when, e, err)
			}
			if _, err := d.c.Exec(ctx, id, &api.ExecRequest{Language: api.LanguageShell, Code: "pwd", Cwd: "/home/other"}, nil); err == nil {
				t.Fatalf("%s: cwd /home/other taken", when)
			}
			a, err := d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: []string{"true"}, Stdin: true, Cwd: "/home/user/sub"})
			if err != nil || a.Cwd != "/home/user/sub" {
				t.Fatalf("%s: an attached process: %+v %v", when, a, err)
			}
		}
		pooled := d.session(t, &api.CreateSessionRequest{Template: "e2b"})
		check(t, "pooled", pooled)
		cold := d.session(t, &api.CreateSessionRequest{Template: "e2b", MemoryMB: ptr(int64(192))})
		check(t, "cold", cold)
		// Other templates keep theirs.
		plain := d.session(t, &api.CreateSessionRequest{})
		if e := d.sh(t, plain, "whoami; echo $HOME; pwd"); e.Stdout != "sandbox\n/workspace\n/workspace\n" {
			t.Fatalf("a python session: %s", describe(e))
		}
		d.bounce("restart")
		check(t, "restored", pooled)
		if _, err := d.c.Exec(ctx, plain, &api.ExecRequest{Language: api.LanguageShell, Code: "pwd", Cwd: "/home/user"}, nil); err == nil {
			t.Fatal("a python session took cwd /home/user")
		}
	})
}
