package api

import (
	"strings"

	"github.com/containerd/errdefs"
)

// CheckLabels refuses labels that could not be filtered on: a session's
// and a node's (the daemon's [node] labels) alike.
func CheckLabels(labels map[string]string) error {
	for k := range labels {
		if k == "" || strings.ContainsAny(k, "=\x00") || len(k) > 256 || len(labels[k]) > 4096 {
			return Errorf(errdefs.ErrInvalidArgument, "bad label %s: keys must be 1 to 256 bytes without '=', values at most 4096 bytes", Quote(k))
		}
	}
	if len(labels) > 64 {
		return Errorf(errdefs.ErrInvalidArgument, "too many labels (%d): at most 64", len(labels))
	}
	return nil
}
