// Package testutil holds what tests of several packages share.
package testutil

import (
	"os"
	"testing"
)

// RequiresRoot fails (never skips) a test that needs root: CI runs as root,
// so a skip there would hide a broken feature.
func RequiresRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test must run as root (sandboxes need it); run it with sudo")
	}
}
