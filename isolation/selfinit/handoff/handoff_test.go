package handoff

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv marks this test binary run as the child of TestHandOff: it
// says "own" and ends, where the constructor did not execute anything.
const childEnv = "HANDOFF_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		fmt.Print("own")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestHandOff runs this test binary (which links the constructor) as
// libcontainer runs its init, with ARGV0 the memory copy of /bin/echo as
// HandOffInit names one: the constructor executes the copy, which echoes
// its argument; anything else runs this binary's own main.
func TestHandOff(t *testing.T) {
	fd, err := unix.MemfdCreate("handoff-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	mem := os.NewFile(uintptr(fd), "handoff-test")
	defer mem.Close()
	echo, err := os.Open("/bin/echo")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	if _, err := io.Copy(mem, echo); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyPath := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), mem.Fd())
	for _, tc := range []struct {
		name string
		args []string
		pipe bool
		want string
	}{
		{"libcontainer's init", []string{copyPath, "init"}, true, "init\n"},
		{"no init pipe", []string{copyPath, "init"}, false, "own"},
		{"not init", []string{copyPath, "run"}, true, "own"},
		{"more arguments", []string{copyPath, "init", "x"}, true, "own"},
		{"ARGV0 not a copy", []string{self, "init"}, true, "own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &exec.Cmd{Path: self, Args: tc.args, Env: []string{childEnv + "=1"}}
			if tc.pipe {
				cmd.Env = append(cmd.Env, "_LIBCONTAINER_INITPIPE=3")
			}
			out, err := cmd.Output()
			if err != nil || string(out) != tc.want {
				t.Fatalf("%q: %v, want %q", out, err, strings.TrimSpace(tc.want))
			}
		})
	}
}
