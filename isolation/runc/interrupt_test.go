package runc

import (
	"testing"

	"github.com/sandboxd/sandboxd/isolation/isolationtest"
)

// TestSandboxInterrupt interrupts a Python cell and a shell command from
// beside the Exec that waits for them, as the daemon does: each ends at
// once with status interrupted, Python with a KeyboardInterrupt and its
// variables kept. With nothing running, Interrupt does nothing.
func TestSandboxInterrupt(t *testing.T) {
	r := newTestRuntime(t)
	isolationtest.CheckInterrupt(t, startTestSandbox(t, r, "interrupt1"))
}
