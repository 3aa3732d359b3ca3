package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/sandboxd/sandboxd/api"
)

// PutFile writes a file into a session (relative paths are under
// /workspace); parent folders are created.
func (c *Client) PutFile(ctx context.Context, id, path string, content io.Reader) (*api.FileWritten, error) {
	var out api.FileWritten
	return &out, c.call(ctx, request{method: "PUT", path: sessionPath(id, "/files"), query: url.Values{"path": {path}}, body: content}, &out)
}

// GetFile opens a file of a session for reading, or lists a folder: exactly
// one of the two results is set. The caller closes the reader.
func (c *Client) GetFile(ctx context.Context, id, path string) (io.ReadCloser, *api.FileList, error) {
	resp, err := c.send(ctx, request{method: "GET", path: sessionPath(id, "/files"), query: url.Values{"path": {path}}})
	if err != nil {
		return nil, nil, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		defer resp.Body.Close()
		var list api.FileList
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			return nil, nil, fmt.Errorf("bad folder listing from sandboxd: %w", err)
		}
		return nil, &list, nil
	}
	return resp.Body, nil, nil
}

// DeleteFile removes a file or folder of a session.
func (c *Client) DeleteFile(ctx context.Context, id, path string) error {
	return c.call(ctx, request{method: "DELETE", path: sessionPath(id, "/files"), query: url.Values{"path": {path}}}, nil)
}
