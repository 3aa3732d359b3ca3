package pool

import (
	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/store"
)

// templateRecord is a template definition as the store keeps it.
func templateRecord(t *api.Template) *store.Template {
	return &store.Template{
		Name: t.Name, Description: t.Description, Rootfs: t.Rootfs, Env: t.Env, Preload: t.Preload,
		Limits: (*store.LimitDefaults)(t.Limits), PoolSize: t.PoolSize, Packages: t.Packages, IndexURL: t.IndexURL,
		Runtime: t.Runtime, User: (*store.TemplateUser)(t.User), OwnerUID: t.OwnerUID, CreatedAt: t.CreatedAt,
	}
}

// templateDef is a stored template's definition.
func templateDef(r *store.Template) api.Template {
	return api.Template{
		Name: r.Name, Description: r.Description, Rootfs: r.Rootfs, Env: r.Env, Preload: r.Preload,
		Limits: (*api.LimitDefaults)(r.Limits), PoolSize: r.PoolSize, Packages: r.Packages, IndexURL: r.IndexURL,
		Runtime: r.Runtime, User: (*api.TemplateUser)(r.User), OwnerUID: r.OwnerUID, CreatedAt: r.CreatedAt,
	}
}
