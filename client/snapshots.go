package client

import (
	"context"
	"io"
	"net/url"

	"github.com/sandboxd/sandboxd/api"
)

// CreateSnapshot keeps session id's files and settings as a snapshot of
// the caller's, named name ("" none) (docs/API.md, Snapshots and fork).
func (c *Client) CreateSnapshot(ctx context.Context, id, name string) (*api.Snapshot, error) {
	var out api.Snapshot
	return &out, c.call(ctx, request{method: "POST", path: sessionPath(id, "/snapshots"), json: api.CreateSnapshotRequest{Name: name}}, &out)
}

// ListSnapshots lists the caller's snapshots (root: everyone's), oldest
// first.
func (c *Client) ListSnapshots(ctx context.Context) ([]api.Snapshot, error) {
	var out api.SnapshotList
	err := c.call(ctx, request{method: "GET", path: "/v1/snapshots"}, &out)
	return out.Snapshots, err
}

// GetSnapshot is one snapshot, by id or by the caller's name for it.
func (c *Client) GetSnapshot(ctx context.Context, ref string) (*api.Snapshot, error) {
	var out api.Snapshot
	return &out, c.call(ctx, request{method: "GET", path: snapshotPath(ref)}, &out)
}

// DeleteSnapshot removes a snapshot and its files; sessions made from it
// keep theirs.
func (c *Client) DeleteSnapshot(ctx context.Context, ref string) error {
	return c.call(ctx, request{method: "DELETE", path: snapshotPath(ref)}, nil)
}

func snapshotPath(ref string) string { return "/v1/snapshots/" + url.PathEscape(ref) }

// CreateSessions makes req.Count sessions (0: one) from the snapshot
// req.Snapshot names, all of them or none. A create with a count answers
// a list, where CreateSession's answers one session: the count is always
// sent, so that the answer is always the list.
func (c *Client) CreateSessions(ctx context.Context, req *api.CreateSessionRequest) ([]api.Session, error) {
	r := *req
	if r.Count == 0 {
		r.Count = 1
	}
	var out api.SessionList
	err := c.call(ctx, request{method: "POST", path: "/v1/sessions", json: &r}, &out)
	return out.Sessions, err
}

// Fork makes count sessions (0: one) that start with session id's files
// and settings as they are now; id keeps running.
func (c *Client) Fork(ctx context.Context, id string, count int) ([]api.Session, error) {
	var out api.SessionList
	err := c.call(ctx, request{method: "POST", path: sessionPath(id, "/fork"), json: api.ForkRequest{Count: count}}, &out)
	return out.Sessions, err
}

// ExportSnapshot reads snapshot ref as one portable tar stream (its
// settings, then its files), for ImportSnapshot on another node. The
// caller closes it.
func (c *Client) ExportSnapshot(ctx context.Context, ref string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, request{method: "GET", path: snapshotPath(ref) + "/export"})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ImportSnapshot makes a snapshot of the caller's from an exported one,
// named name ("": the name it was exported with). Its settings are
// checked as a create's on this node.
func (c *Client) ImportSnapshot(ctx context.Context, name string, stream io.Reader) (*api.Snapshot, error) {
	var q url.Values
	if name != "" {
		q = url.Values{"name": {name}}
	}
	var out api.Snapshot
	return &out, c.call(ctx, request{method: "POST", path: "/v1/snapshots/import", query: q, body: stream}, &out)
}
