package pool

import (
	"archive/tar"
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/unpack"
)

// TestImportErrorAnswer checks an archive over a bound reaches clients as
// before unpack had classes of its own: 413, payload_too_large, unpack's
// message; its other classes map as they are.
func TestImportErrorAnswer(t *testing.T) {
	dir := t.TempDir()
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	for _, name := range []string{"a", "b"} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644})
	}
	_ = tw.Close()
	_, err := unpack.Tar(context.Background(), bytes.NewReader(tarball.Bytes()), dir, unpack.Options{MaxEntries: 1})
	status, body := api.FromError(importError(err))
	if status != http.StatusRequestEntityTooLarge || body.Error.Code != api.CodePayloadTooLarge || body.Error.Message != "the archive has more than 1 entries" {
		t.Errorf("too many entries: %d %+v", status, body)
	}
	_, err = unpack.Tar(context.Background(), strings.NewReader("not a tar"), t.TempDir(), unpack.Options{})
	if status, body := api.FromError(importError(err)); status != http.StatusBadRequest || body.Error.Code != api.CodeInvalidArgument ||
		!strings.HasPrefix(body.Error.Message, "not a tar archive") {
		t.Errorf("not a tar: %d %+v", status, body)
	}
}
