package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestQuiesceRefused: an agent that inherited its listener (runc, not
// gVisor) refuses to quiesce, saying why, and serves on over the same
// connection. (Quiesced under gVisor: isolation/runsc's TestCheckpoint.)
func TestQuiesceRefused(t *testing.T) { bothSupervisors(t, testQuiesceRefused) }

func testQuiesceRefused(t *testing.T, sup string) {
	a := startAgentOn(t, Files(), false, sup)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a.exec(t, Request{Language: LanguagePython, Code: "x = 1"})
	err := a.conn.Quiesce(ctx)
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Message, "gVisor") {
		t.Fatalf("Quiesce under no gVisor = %v", err)
	}
	if m, _, _ := a.exec(t, Request{Language: LanguagePython, Code: "x + 1"}); m.Result == nil || *m.Result != "2" {
		t.Fatalf("after a refused quiesce: %+v", m)
	}
}
