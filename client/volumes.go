package client

import (
	"context"
	"io"
	"net/url"

	"github.com/sandboxd/sandboxd/api"
)

// CreateVolume makes a volume of the caller's (docs/API.md, Volumes).
func (c *Client) CreateVolume(ctx context.Context, req api.CreateVolumeRequest) (*api.Volume, error) {
	var out api.Volume
	return &out, c.call(ctx, request{method: "POST", path: "/v1/volumes", json: req}, &out)
}

// Volumes lists the caller's volumes (root: everyone's).
func (c *Client) Volumes(ctx context.Context) ([]api.Volume, error) {
	var out api.VolumeList
	err := c.call(ctx, request{method: "GET", path: "/v1/volumes"}, &out)
	return out.Volumes, err
}

// Volume is one volume, by name.
func (c *Client) Volume(ctx context.Context, name string) (*api.Volume, error) {
	var out api.Volume
	return &out, c.call(ctx, request{method: "GET", path: volumePath(name)}, &out)
}

// UpdateVolume replaces the users volume name is shared with (nil or
// empty: no one); it answers the volume as it is now.
func (c *Client) UpdateVolume(ctx context.Context, name string, sharedWith []uint32) (*api.Volume, error) {
	if sharedWith == nil {
		sharedWith = []uint32{}
	}
	var out api.Volume
	return &out, c.call(ctx, request{method: "PATCH", path: volumePath(name), json: api.UpdateVolumeRequest{SharedWith: &sharedWith}}, &out)
}

func volumePath(name string) string { return "/v1/volumes/" + url.PathEscape(name) }

// GetVolumeFile opens a file of a volume for reading, or lists a folder
// (paths from the volume's root): exactly one of the two results is set.
func (c *Client) GetVolumeFile(ctx context.Context, name, path string) (io.ReadCloser, *api.FileList, error) {
	return c.getFile(ctx, volumePath(name)+"/files", path)
}

// PutVolumeFile writes a file into a volume, making parent folders.
func (c *Client) PutVolumeFile(ctx context.Context, name, path string, content io.Reader) (*api.FileWritten, error) {
	var out api.FileWritten
	return &out, c.call(ctx, request{method: "PUT", path: volumePath(name) + "/files", query: url.Values{"path": {path}}, body: content}, &out)
}

// DeleteVolumeFile removes a file or folder of a volume.
func (c *Client) DeleteVolumeFile(ctx context.Context, name, path string) error {
	return c.call(ctx, request{method: "DELETE", path: volumePath(name) + "/files", query: url.Values{"path": {path}}}, nil)
}

// DeleteVolume removes a volume and its files; a conflict while a session
// mounts it.
func (c *Client) DeleteVolume(ctx context.Context, name string) error {
	return c.call(ctx, request{method: "DELETE", path: volumePath(name)}, nil)
}
