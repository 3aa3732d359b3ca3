package volume

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPristine makes two session filesystems from one pristine image: each
// is sparse, mounts, holds its own files and is bound by its own size.
func TestPristine(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	p := &Pristine{Dir: filepath.Join(base, "pristine")}
	const size = 64 << 20
	var dirs []string
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(base, name)
		t.Cleanup(func() { _ = Remove(dir) })
		if err := Ensure(ctx, Loop, p, dir, size); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(Workspace(dir), "name"), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	for i, dir := range dirs {
		if b, _ := os.ReadFile(filepath.Join(Workspace(dir), "name")); string(b) != []string{"a", "b"}[i] {
			t.Errorf("%s holds %q", dir, b)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(image(dir), &st); err != nil {
			t.Fatal(err)
		}
		if st.Size != size || st.Blocks*512 > 8<<20 {
			t.Errorf("image of %d bytes takes %d: not a sparse copy", st.Size, st.Blocks*512)
		}
		if _, total, err := Usage(Loop, dir); err != nil || total > size || total < size*8/10 {
			t.Errorf("filesystem size %d: %v", total, err)
		}
	}
	ents, _ := os.ReadDir(p.Dir)
	if len(ents) != 1 {
		t.Errorf("pristine images: %v", ents)
	}
}
