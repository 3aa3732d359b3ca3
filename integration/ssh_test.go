package integration

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSSHHost: sandboxctl --host ssh://user@host/socket reaches a daemon
// through ssh, as docker does (ssh runs sandboxctl dial-stdio on the far
// side, as the far user): create, exec, exec -i and the API's streams
// work over it, $SANDBOXD_HOST says the same, and a host that does not
// answer is one plain error. The sshd is the test's own, on loopback.
func TestSSHHost(t *testing.T) {
	t.Parallel()
	hostOnly(t) // nothing here needs cgroup v2 or systemd
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Fatalf("no sshd: make test-deps installs openssh-server (%v)", err)
	}
	d := startDaemon(t, "")
	dir := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "host"))
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "id"))
	pub, err := os.ReadFile(filepath.Join(dir, "id.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s/host
PidFile %s/sshd.pid
AuthorizedKeysFile %s/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
`, port, dir, dir, dir)
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd's privilege separation folder, made if the host has none.
	if _, err := os.Stat("/run/sshd"); os.IsNotExist(err) {
		if err := os.Mkdir("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("/run/sshd") })
	}
	sshd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var sshdLog bytes.Buffer
	sshd.Stdout, sshd.Stderr = &sshdLog, &sshdLog
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sshd.Process.Kill()
		_ = sshd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen:\n%s", sshdLog.String())
		}
	}
	sshCfg := fmt.Sprintf("Host 127.0.0.1\n  IdentityFile %s/id\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  LogLevel ERROR\n", dir)
	if err := os.WriteFile(filepath.Join(dir, "ssh_config"), []byte(sshCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SANDBOXD_SSH=ssh -F "+filepath.Join(dir, "ssh_config"),
		"SANDBOXD_SSH_REMOTE_COMMAND="+filepath.Join(bin, "sandboxctl"), "SANDBOXD_SOCKET=/nonexistent.sock")
	host := fmt.Sprintf("ssh://root@127.0.0.1:%d%s", port, d.socket)
	ctl := func(stdin string, extraEnv []string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "sandboxctl"), args...)
		cmd.Env = append(append([]string{}, env...), extraEnv...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}

	out, stderr, code := ctl("", nil, "--host", host, "create", "--label", "via=ssh")
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 16 {
		t.Fatalf("create over ssh: %d %q %q\nsshd:\n%s", code, out, stderr, sshdLog.String())
	}
	t.Cleanup(func() { d.ctl(t, "", "rm", "-f", id) })
	if out, stderr, code := ctl("", nil, "-H", host, "exec", id, "-c", "x = 6 * 7\nprint(x)"); code != 0 || out != "42\n" {
		t.Fatalf("exec over ssh: %d %q %q", code, out, stderr)
	}
	if out, stderr, code := ctl("a\nb\n", nil, "-H", host, "exec", "-i", id, "--", "wc", "-l"); code != 0 || strings.TrimSpace(out) != "2" {
		t.Fatalf("exec -i over ssh: %d %q %q", code, out, stderr)
	}
	if out, stderr, code := ctl("", []string{"SANDBOXD_HOST=" + host}, "ls", "-q", "-f", "label=via=ssh"); code != 0 || strings.TrimSpace(out) != id {
		t.Fatalf("ls with $SANDBOXD_HOST: %d %q %q", code, out, stderr)
	}
	// The session is the far user's (root's, here): the daemon saw
	// dial-stdio's peer credentials.
	if s, err := d.c.GetSession(t.Context(), id); err != nil || s.OwnerUID != 0 {
		t.Fatalf("the session over ssh: %+v %v", s, err)
	}
	bad := fmt.Sprintf("ssh://root@127.0.0.1:%d/run/none.sock", port)
	if _, stderr, code := ctl("", nil, "-H", bad, "ls"); code != 125 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "none.sock") {
		t.Fatalf("a far daemon that is not there: %d %q", code, stderr)
	}
	if _, stderr, code := ctl("", nil, "-H", "ftp://x", "ls"); code != 125 || !strings.Contains(stderr, "ssh://") {
		t.Fatalf("a bad host: %d %q", code, stderr)
	}
}
