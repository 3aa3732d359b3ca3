package main

import (
	"context"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// invokeDefaultTemplate is the template a request without one gets: the
// daemon's built-in.
const invokeDefaultTemplate = "python"

// memoryLimit is the memory limit a sandbox of template gets when the
// request names none: the template's, else the daemon's default. A
// sandbox cannot read its own (its cgroup is not mounted inside, and the
// lxcfs view of /proc/meminfo is optional), so the context's
// memory_limit_in_mb comes from here. 0 when the daemon does not say; the
// create that follows tells whether it is reachable.
func memoryLimit(ctx context.Context, c *client.Client, template string) int64 {
	if template == "" {
		template = invokeDefaultTemplate
	}
	t, err := c.Template(ctx, template)
	if err != nil {
		return 0
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0
	}
	return templateMemory(t, info)
}

// templateMemory overlays a template's memory limit on the daemon's
// default, as the daemon does.
func templateMemory(t *api.Template, info *api.Info) int64 {
	if t != nil && t.Limits != nil && t.Limits.MemoryMB != nil {
		return *t.Limits.MemoryMB
	}
	if info != nil {
		return info.Defaults.MemoryMB
	}
	return 0
}
