package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
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

// PutFileMeta is PutFile, the file given user metadata (keys lower
// case): stat and listings answer it as metadata.
func (c *Client) PutFileMeta(ctx context.Context, id, path string, content io.Reader, meta map[string]string) (*api.FileWritten, error) {
	h := http.Header{}
	for k, v := range meta {
		h.Set(api.MetaHeaderPrefix+k, v)
	}
	var out api.FileWritten
	return &out, c.call(ctx, request{method: "PUT", path: sessionPath(id, "/files"), query: url.Values{"path": {path}}, body: content, header: h}, &out)
}

// GetFile opens a file of a session for reading, or lists a folder: exactly
// one of the two results is set. The caller closes the reader.
func (c *Client) GetFile(ctx context.Context, id, path string) (io.ReadCloser, *api.FileList, error) {
	return c.getFile(ctx, sessionPath(id, "/files"), path)
}

// getFile is GetFile of the files at apiPath (a session's, a volume's).
func (c *Client) getFile(ctx context.Context, apiPath, path string) (io.ReadCloser, *api.FileList, error) {
	resp, err := c.send(ctx, request{method: "GET", path: apiPath, query: url.Values{"path": {path}}})
	if err != nil {
		return nil, nil, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		defer resp.Body.Close()
		var list api.FileList
		if err := decode(resp.Body, &list); err != nil {
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

// PutTar unpacks a tar stream into the folder path of a session (made as
// needed): folders, files and symlinks (cp -r).
func (c *Client) PutTar(ctx context.Context, id, path string, tarStream io.Reader) (*api.FileWritten, error) {
	var out api.FileWritten
	return &out, c.call(ctx, request{method: "PUT", path: sessionPath(id, "/files"), query: url.Values{"path": {path}, "format": {"tar"}}, body: tarStream}, &out)
}

// GetTar reads a folder of a session (or a file) as a tar stream, the
// folder's contents under its own name. The caller closes it.
func (c *Client) GetTar(ctx context.Context, id, path string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, request{method: "GET", path: sessionPath(id, "/files"), query: url.Values{"path": {path}, "format": {"tar"}}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
