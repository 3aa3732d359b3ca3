package daemon

import (
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

// TestProcViewInfo checks what GET /v1/info says of the lxcfs that serves
// sandboxes: which one, and why none when none does (also when the
// daemon's own is between a death and its restart).
func TestProcViewInfo(t *testing.T) {
	off := openProcView(config.Config{}, t.TempDir(), nil)
	cases := []struct {
		name    string
		pv      procView
		serving bool
		want    api.ProcViewInfo
	}{
		{"off", off, false, api.ProcViewInfo{ServedBy: api.ProcViewNone, Problem: `turned off (lxcfs_dir = "")`}},
		{"not installed", procView{problem: "lxcfs is not installed"}, false, api.ProcViewInfo{ServedBy: api.ProcViewNone, Problem: "lxcfs is not installed"}},
		{"system", procView{source: api.ProcViewSystem}, true, api.ProcViewInfo{ServedBy: api.ProcViewSystem}},
		{"daemon", procView{source: api.ProcViewDaemon}, true, api.ProcViewInfo{ServedBy: api.ProcViewDaemon}},
		{"daemon's restarting", procView{source: api.ProcViewDaemon}, false, api.ProcViewInfo{ServedBy: api.ProcViewNone, Problem: "the daemon's lxcfs does not answer now"}},
	}
	for _, c := range cases {
		if got := c.pv.info(c.serving); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if err := off.close(false); err != nil {
		t.Errorf("close with no lxcfs of its own: %v", err)
	}
}
