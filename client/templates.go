package client

import (
	"context"
	"io"
	"net/url"

	"github.com/sandboxd/sandboxd/api"
)

func templatePath(name, sub string) string { return "/v1/templates/" + url.PathEscape(name) + sub }

// Templates lists the templates sessions can start from.
func (c *Client) Templates(ctx context.Context) ([]api.Template, error) {
	var out api.TemplateList
	return out.Templates, c.call(ctx, request{method: "GET", path: "/v1/templates"}, &out)
}

// Template describes one template.
func (c *Client) Template(ctx context.Context, name string) (*api.Template, error) {
	var out api.Template
	return &out, c.call(ctx, request{method: "GET", path: templatePath(name, "")}, &out)
}

// AddTemplate adds a template; the daemon starts one sandbox of it first
// and refuses it, saying why, if it cannot start.
func (c *Client) AddTemplate(ctx context.Context, t *api.Template) (*api.Template, error) {
	var out api.Template
	return &out, c.call(ctx, request{method: "POST", path: "/v1/templates", json: t}, &out)
}

// DeleteTemplate removes a template no session uses (or the unpacked root
// filesystem of an import no template took).
func (c *Client) DeleteTemplate(ctx context.Context, name string) error {
	return c.call(ctx, request{method: "DELETE", path: templatePath(name, "")}, nil)
}

// ImportRootfs sends a root filesystem tarball (tar or tar.gz) for the
// template name; AddTemplate with the answer's Rootfs makes the template.
func (c *Client) ImportRootfs(ctx context.Context, name string, tarball io.Reader) (*api.RootfsImported, error) {
	var out api.RootfsImported
	return &out, c.call(ctx, request{method: "PUT", path: templatePath(name, "/rootfs"), body: tarball}, &out)
}
