package agent

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestLineReader reads lines short and longer than its buffer, refuses
// one over the limit, and reports a line cut short; after an error it
// stays failed.
func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 3*lineBuf+17)
	l := newLineReader(strings.NewReader("a\n\n"+long+"\nb\n"), 4*lineBuf)
	for _, want := range []string{"a", "", long, "b"} {
		got, err := l.next()
		if err != nil || string(got) != want {
			t.Fatalf("next() = %d bytes, %v; want %d bytes", len(got), err, len(want))
		}
	}
	if _, err := l.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}

	l = newLineReader(strings.NewReader(strings.Repeat("y", 2*lineBuf)+"\nz\n"), lineBuf+1)
	if _, err := l.next(); !errors.Is(err, errLineTooLong) {
		t.Fatalf("a line over the limit: %v", err)
	}
	if _, err := l.next(); !errors.Is(err, errLineTooLong) {
		t.Fatalf("after an error: %v", err)
	}

	l = newLineReader(bytes.NewReader([]byte(`{"type":"do`)), lineBuf)
	if _, err := l.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a line cut short: %v", err)
	}
}

// FuzzLineReader: whatever the agent sends, lines come back as they were
// sent and none is over the limit.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nbb\n"), 4)
	f.Add([]byte("no newline"), 100)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<20 {
			return
		}
		l := newLineReader(bytes.NewReader(in), max)
		var got [][]byte
		for {
			line, err := l.next()
			if err != nil {
				break
			}
			if len(line) > max+lineBuf {
				t.Fatalf("a line of %d bytes passed a limit of %d", len(line), max)
			}
			got = append(got, append([]byte(nil), line...))
		}
		for i, line := range got {
			want := bytes.Split(in, []byte("\n"))[i]
			if !bytes.Equal(line, want) {
				t.Fatalf("line %d = %q, want %q", i, line, want)
			}
		}
	})
}
