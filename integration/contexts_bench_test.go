package integration

import (
	"context"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// BenchmarkContextFork times a context copied from one whose interpreter
// holds 100 MB (issue 33's goal: p50 ≤ 10 ms), beside an empty context's
// create (BenchmarkContextCreate) in the same run; each context is
// deleted between rounds, off the clock.
func BenchmarkContextFork(b *testing.B) {
	benchContext(b, api.ContextDefault)
}

// BenchmarkContextCreate is the baseline: a new, empty interpreter.
func BenchmarkContextCreate(b *testing.B) {
	benchContext(b, "")
}

func benchContext(b *testing.B, from string) {
	d := startDaemon(b, "pool_size = 0\n")
	ctx := context.Background()
	id := d.session(b, nil)
	if _, err := d.c.Exec(ctx, id, &api.ExecRequest{Language: api.LanguagePython, Code: "state = bytearray(100 << 20)"}, nil); err != nil {
		b.Fatal(err)
	}
	var cid string
	measure(b, func() error {
		c, err := d.c.CreateContext(ctx, id, api.CreateContextRequest{From: from})
		if err == nil {
			cid = c.ID
		}
		return err
	}, func() {
		if err := d.c.DeleteContext(ctx, id, cid); err != nil {
			b.Fatal(err)
		}
	})
}
