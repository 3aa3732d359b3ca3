package e2b

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/e2b/keys"
)

// A sandbox's own facts live in its session's labels: which gateway and
// key made it (so that a list or a sweep sees only its own, and a key
// never another's), its E2B template id, and its metadata.
const (
	labelGateway  = "e2b.gateway"
	labelKey      = "e2b.key"
	labelTemplate = "e2b.template"
	// labelMeta prefixes each metadata key.
	labelMeta = "e2b.meta/"
)

// labels are a new sandbox's: the gateway's, the key's, the template's and
// the metadata's.
func (g *Gateway) labels(k keys.Key, template string, meta map[string]string) (map[string]string, error) {
	l := map[string]string{labelGateway: g.o.ID.ID, labelKey: k.ID, labelTemplate: template}
	for mk, v := range meta {
		if mk == "" || strings.ContainsAny(mk, "=\x00") {
			return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("metadata key %s: keys are 1 to 247 bytes without '='", api.Quote(mk)))
		}
		l[labelMeta+mk] = v
	}
	if err := api.CheckLabels(l); err != nil {
		return nil, errdefs.ErrInvalidArgument.WithMessage("metadata: " + err.Error())
	}
	return l, nil
}

// scope are the labels every session of key k carries.
func (g *Gateway) scope(k keys.Key) map[string]string {
	return map[string]string{labelGateway: g.o.ID.ID, labelKey: k.ID}
}

// owns reports whether s is a sandbox of key k made by this gateway.
func (g *Gateway) owns(k keys.Key, s *api.Session) bool {
	return s.Labels[labelGateway] == g.o.ID.ID && s.Labels[labelKey] == k.ID
}

// metadataOf is a sandbox's metadata, from its labels.
func metadataOf(labels map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range labels {
		if mk, ok := strings.CutPrefix(k, labelMeta); ok {
			m[mk] = v
		}
	}
	return m
}
