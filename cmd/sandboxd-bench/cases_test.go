package main

import (
	"context"
	"testing"
)

func TestIdlePython(t *testing.T) {
	pss, err := idlePython(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	// An interpreter's own pages are a few MiB; 0 would mean the
	// processes were gone or their smaps unread.
	if pss < 1<<20 || pss > 64<<20 {
		t.Fatalf("mean PSS of 3 idle python3 = %d bytes", pss)
	}
	t.Logf("%.2f MiB", float64(pss)/(1<<20))
}
