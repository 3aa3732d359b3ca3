package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/sandboxd/sandboxd/api"
)

// StatFile describes a file, folder or symlink of a session (a symlink
// itself, not its target).
func (c *Client) StatFile(ctx context.Context, id, path string) (*api.FileStat, error) {
	var out api.FileStat
	return &out, c.call(ctx, request{method: "GET", path: sessionPath(id, "/files/stat"), query: url.Values{"path": {path}}}, &out)
}

// MakeFolder makes a folder of a session and the folders above it
// (mkdir -p); Created says whether it was not there before.
func (c *Client) MakeFolder(ctx context.Context, id, path string) (*api.FolderMade, error) {
	var out api.FolderMade
	return &out, c.call(ctx, request{method: "POST", path: sessionPath(id, "/files/mkdir"), json: api.MkdirRequest{Path: path}}, &out)
}

// MoveFile renames a file or folder of a session within its root; it
// never replaces one (a conflict error if to exists).
func (c *Client) MoveFile(ctx context.Context, id, from, to string) (*api.FileStat, error) {
	var out api.FileStat
	return &out, c.call(ctx, request{method: "POST", path: sessionPath(id, "/files/move"), json: api.FileMoveRequest{From: from, To: to}}, &out)
}

// ListFolder lists a folder of a session to depth levels (1: its own
// entries; deeper entries carry their whole path).
func (c *Client) ListFolder(ctx context.Context, id, path string, depth int) (*api.FileList, error) {
	var out api.FileList
	return &out, c.call(ctx, request{method: "GET", path: sessionPath(id, "/files"), query: url.Values{"path": {path}, "depth": {strconv.Itoa(depth)}}}, &out)
}

// WatchFiles sends fn what changes in a folder of a session (and below
// it, recursive) as it happens. It returns nil when the daemon ends the
// stream (the session's sandbox or the folder is gone), ctx's error when
// ctx ends, fn's when fn fails, and the stream's error if it fails.
// opened, if not nil, is called once the watch is set (the daemon answers
// only then): no change after it is missed.
func (c *Client) WatchFiles(ctx context.Context, id, path string, recursive bool, opened func(), fn func(api.FileEvent) error) error {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "1")
	}
	resp, err := c.send(ctx, request{method: "GET", path: sessionPath(id, "/files/watch"), query: q, accept: api.StreamMIME})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if opened != nil {
		opened()
	}
	return eachLine(ctx, c, resp, "watch", fn)
}
