package integration

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

func TestFilesRoundTrip(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		id := d.session(t, nil)
		content := make([]byte, 256*1024)
		for i := range content {
			content[i] = byte(i * 7)
		}
		for _, p := range []string{"data/in/blob.bin", "/workspace/top.bin", "/tmp/t.bin"} {
			w, err := d.c.PutFile(ctx, id, p, bytes.NewReader(content))
			if err != nil || w.Size != int64(len(content)) {
				t.Fatalf("put %s: %+v %v", p, w, err)
			}
			r, list, err := d.c.GetFile(ctx, id, p)
			if err != nil || list != nil {
				t.Fatalf("get %s: %v", p, err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, content) {
				t.Fatalf("%s: content differs", p)
			}
		}
		e := d.py(t, id, "import hashlib\n[len(open(p, 'rb').read()) for p in ('/workspace/data/in/blob.bin', 'top.bin', '/tmp/t.bin')]")
		if result(e) != "[262144, 262144, 262144]" {
			t.Fatalf("sandbox sees the uploads: %+v", e)
		}
		if e := d.sh(t, id, "echo more >> data/in/blob.bin && echo ok"); strings.TrimSpace(e.Stdout) != "ok" {
			t.Fatalf("sandbox can change uploaded files: %+v", e)
		}
		d.sh(t, id, "echo made-inside > out.txt")
		r, _, err := d.c.GetFile(ctx, id, "out.txt")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if string(got) != "made-inside\n" {
			t.Fatalf("download: %q", got)
		}
		_, list, err := d.c.GetFile(ctx, id, "/workspace/data")
		if err != nil || list == nil || len(list.Entries) != 1 || list.Entries[0].Name != "in" || list.Entries[0].Type != "dir" {
			t.Fatalf("listing: %+v %v", list, err)
		}
		if err := d.c.DeleteFile(ctx, id, "data"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.c.GetFile(ctx, id, "data/in/blob.bin"); !errdefs.IsNotFound(err) {
			t.Fatalf("deleted file must be not found: %v", err)
		}
		if e := d.sh(t, id, "test -e data && echo there || echo gone"); strings.TrimSpace(e.Stdout) != "gone" {
			t.Fatalf("delete seen inside: %q", e.Stdout)
		}
	})
}

// TestFileEscapes tries every way out of /workspace and /tmp; each must be
// refused with 400 and must touch nothing on the host.
func TestFileEscapes(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg+"max_upload_bytes = 1024\n")
		ctx := context.Background()
		id := d.session(t, nil)
		hostFile, err := os.CreateTemp("", "sandboxd-host-")
		if err != nil {
			t.Fatal(err)
		}
		hostFile.WriteString("host content")
		hostFile.Close()
		t.Cleanup(func() { os.Remove(hostFile.Name()) })
		if e := d.sh(t, id, "ln -s / root && ln -s "+hostFile.Name()+" hostfile && ln -s ../../../../../../../.. up && mkdir -p d && ln -s /etc d/etc && ln -s /tmp/../.. /tmp/esc && echo ok"); strings.TrimSpace(e.Stdout) != "ok" {
			t.Fatalf("planting symlinks: %+v", e)
		}
		reads := []string{
			"../etc/passwd", "/etc/passwd", "/workspace/../etc/passwd", "/workspace/../../etc/passwd", "/",
			"/proc/self/environ", "/tmp/../etc/passwd", "root/etc/passwd", "hostfile", "up/etc/passwd",
			"d/etc/passwd", "/tmp/esc/etc/passwd", "root", "/workspacex/a", "\x00", "",
		}
		for _, p := range reads {
			_, _, err := d.c.GetFile(ctx, id, p)
			if !errdefs.IsInvalidArgument(err) {
				t.Errorf("GET %q: want invalid argument, got %v", p, err)
			}
		}
		writes := []string{
			"../evil", "/etc/evil", "root/tmp/evil", "hostfile", "up/tmp/evil", "d/etc/evil", "/tmp/esc/tmp/evil", "root/" + strings.TrimPrefix(hostFile.Name(), "/"),
		}
		for _, p := range writes {
			_, err := d.c.PutFile(ctx, id, p, strings.NewReader("pwned"))
			if !errdefs.IsInvalidArgument(err) {
				t.Errorf("PUT %q: want invalid argument, got %v", p, err)
			}
			if p == "hostfile" {
				continue // deleting the link itself is allowed: checked below
			}
			if err := d.c.DeleteFile(ctx, id, p); !errdefs.IsInvalidArgument(err) && !errdefs.IsNotFound(err) {
				t.Errorf("DELETE %q: want invalid argument or not found, got %v", p, err)
			}
		}
		for _, p := range []string{"root/etc", "up/tmp", "d/etc/hostname"} {
			if err := d.c.DeleteFile(ctx, id, p); !errdefs.IsInvalidArgument(err) {
				t.Errorf("DELETE %q: want invalid argument, got %v", p, err)
			}
		}
		if b, _ := os.ReadFile(hostFile.Name()); string(b) != "host content" {
			t.Fatalf("the host file was changed: %q", b)
		}
		if _, err := os.Stat("/tmp/evil"); err == nil {
			t.Fatal("a file was written on the host's /tmp")
		}
		if _, err := os.Stat("/etc/hostname"); err != nil {
			t.Fatal("/etc/hostname is gone from the host")
		}
		// Removing the symlink itself is fine and leaves its target alone.
		if err := d.c.DeleteFile(ctx, id, "hostfile"); err != nil {
			t.Fatalf("delete a symlink: %v", err)
		}
		if _, err := os.Stat(hostFile.Name()); err != nil {
			t.Fatal("deleting the symlink removed its host target")
		}
		// Size limit: 413.
		if _, err := d.c.PutFile(ctx, id, "big", bytes.NewReader(make([]byte, 2048))); !api.IsPayloadTooLarge(err) {
			t.Fatalf("upload over the limit: %v", err)
		}
		code, body := d.raw(t, "PUT", "/v1/sessions/"+id+"/files?path=big", strings.Repeat("x", 2048))
		if code != 413 || !strings.Contains(string(body), `"payload_too_large"`) {
			t.Fatalf("raw upload over the limit: %d %s", code, body)
		}
	})
}
