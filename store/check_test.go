package store

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"
)

// TestCheckCatchesWhatBboltTrusts: damage that leaves page headers whole,
// which bbolt's own reading believes — to a read outside its pages (a
// fault, fatal in tx.Check's goroutine, when it lands outside the memory
// map), an allocation of terabytes, a check that never ends, or an
// assertion at the next write. The store's reader must refuse each
// before bbolt reads the file, and Recover must salvage it.
func TestCheckCatchesWhatBboltTrusts(t *testing.T) {
	type where struct {
		path string
		pf   *pageFile
	}
	// elem is the offset of element i of page id.
	elem := func(w where, id uint64, i int) int64 {
		return int64(id)*w.pf.pageSize + pageHeaderSize + int64(i)*elementSize
	}
	sessionsRoot := func(t *testing.T, w where) uint64 { return bucketRoot(t, w.path, "sessions") }
	sessionsLeaf := func(t *testing.T, w where) uint64 {
		p, err := w.pf.treePage(sessionsRoot(t, w))
		if err != nil {
			t.Fatal(err)
		}
		_, id, _ := p.branch(0)
		return id
	}
	// inline is the offset of the inline bucket name's value in the root
	// leaf page.
	inline := func(t *testing.T, w where, name string) int64 {
		p, err := w.pf.treePage(w.pf.meta.root)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.count {
			_, k, v, _ := p.leaf(i)
			if string(k) == name {
				if ne.Uint64(v) != 0 {
					t.Fatalf("bucket %s is not inline", name)
				}
				e := elem(w, w.pf.meta.root, i)
				return e + int64(ne.Uint32(p.buf[e-int64(w.pf.meta.root)*w.pf.pageSize+4:])) + int64(len(k))
			}
		}
		t.Fatalf("no bucket %s in the root page", name)
		return 0
	}
	tests := []struct {
		name string
		// patch returns the offset and bytes to write.
		patch func(t *testing.T, w where) (int64, []byte)
	}{
		{"leaf key of length 0 (bbolt asserts at the next write)", func(t *testing.T, w where) (int64, []byte) {
			return elem(w, sessionsLeaf(t, w), 0) + 8, u32(0)
		}},
		{"leaf element past its page (bbolt reads elsewhere)", func(t *testing.T, w where) (int64, []byte) {
			return elem(w, sessionsLeaf(t, w), 1) + 4, u32(0x7fffff00)
		}},
		{"branch child past the file", func(t *testing.T, w where) (int64, []byte) {
			return elem(w, sessionsRoot(t, w), 1) + 8, u64(1 << 40)
		}},
		{"branch child that is its parent (bbolt's check never ends)", func(t *testing.T, w where) (int64, []byte) {
			id := sessionsRoot(t, w)
			return elem(w, id, 1) + 8, u64(id)
		}},
		{"freelist counting 2^40 ids (bbolt allocates 8 TiB)", func(t *testing.T, w where) (int64, []byte) {
			off := int64(w.pf.meta.freelist) * w.pf.pageSize
			return off + 10, append([]byte{0xff, 0xff, 0, 0, 0, 0}, u64(1<<40)...)
		}},
		{"inline page with an id", func(t *testing.T, w where) (int64, []byte) {
			return inline(t, w, "meta") + bucketHeaderSize, u64(7)
		}},
		{"inline keys out of order", func(t *testing.T, w where) (int64, []byte) {
			// The first template's name, "t0", becomes "\xff0".
			v := inline(t, w, "templates") + bucketHeaderSize
			b, _ := os.ReadFile(w.path)
			return v + pageHeaderSize + int64(ne.Uint32(b[v+pageHeaderSize+4:])), []byte{0xff}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := placeFixture(t, false)
			_, pf := placeRecords(t, path)
			off, b := tt.patch(t, where{path, pf})
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteAt(b, off)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(path, Options{Timeout: time.Second})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open: %v", err)
			}
			t.Logf("open: %v", err)
			rep, err := Recover(path, Options{Timeout: time.Second})
			if err != nil {
				t.Fatalf("recover: %v", err)
			}
			if rep.Sessions < fixtureSessions-20 {
				t.Errorf("recover salvaged %d sessions", rep.Sessions)
			}
			s, err := Open(path, Options{Timeout: time.Second})
			if err != nil {
				t.Fatalf("open after recover: %v", err)
			}
			s.Close()
		})
	}
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }
