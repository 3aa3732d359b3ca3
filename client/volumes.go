package client

import (
	"context"
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
	return &out, c.call(ctx, request{method: "GET", path: "/v1/volumes/" + url.PathEscape(name)}, &out)
}

// DeleteVolume removes a volume and its files; a conflict while a session
// mounts it.
func (c *Client) DeleteVolume(ctx context.Context, name string) error {
	return c.call(ctx, request{method: "DELETE", path: "/v1/volumes/" + url.PathEscape(name)}, nil)
}
