package api

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrames(t *testing.T) {
	var b bytes.Buffer
	frames := []struct {
		typ byte
		p   []byte
	}{{FrameStdin, []byte("hi")}, {FrameCloseStdin, nil}, {FrameResize, ResizePayload(40, 120)}, {FrameExit, ExitPayload(-1)}}
	for _, f := range frames {
		if err := WriteFrame(&b, f.typ, f.p); err != nil {
			t.Fatal(err)
		}
	}
	var buf []byte
	for _, f := range frames {
		typ, p, err := ReadFrame(&b, buf)
		if err != nil || typ != f.typ || !bytes.Equal(p, f.p) && len(p)+len(f.p) > 0 {
			t.Fatalf("ReadFrame = %d %q %v, want %d %q", typ, p, err, f.typ, f.p)
		}
		buf = p[:0]
	}
	if _, _, err := ReadFrame(&b, nil); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
	if rows, cols, ok := ParseResize(ResizePayload(40, 120)); !ok || rows != 40 || cols != 120 {
		t.Fatal("resize")
	}
	if code, ok := ParseExit(ExitPayload(137)); !ok || code != 137 {
		t.Fatal("exit")
	}
	if err := WriteFrame(io.Discard, FrameStdin, make([]byte, MaxFrame+1)); err == nil {
		t.Fatal("a frame over MaxFrame was written")
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{1, 0xff, 0xff, 0xff, 0xff}), nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("a length over MaxFrame: %v", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{1, 0, 0, 0, 9, 'a'}), nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut frame: %v", err)
	}
}

// FuzzReadFrame: whatever a client sends, reading frames ends in a frame
// or an error, never a panic or a huge allocation, and what is read
// writes back the same.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, 'h', 'i', 4, 0, 0, 0, 0})
	f.Add([]byte{5, 0, 0, 0, 4, 0, 40, 0, 120})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for {
			typ, p, err := ReadFrame(r, nil)
			if err != nil {
				return
			}
			var b bytes.Buffer
			if err := WriteFrame(&b, typ, p); err != nil {
				t.Fatal(err)
			}
			typ2, p2, err := ReadFrame(&b, nil)
			if err != nil || typ2 != typ || !bytes.Equal(p, p2) {
				t.Fatalf("round trip: %d %q -> %d %q %v", typ, p, typ2, p2, err)
			}
			ParseResize(p)
			ParseExit(p)
		}
	})
}
