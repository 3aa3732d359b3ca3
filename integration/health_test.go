package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestHealthCheck: a healthy daemon answers 200 with every check passed
// and sandboxctl health exits 0; one whose data dir is below its floor
// answers 200 degraded with the reason (issue 30: it answered 503
// unhealthy, which a liveness probe would restart), and sandboxctl health
// exits 1 saying it (a readiness probe skips the node), while sessions
// still run.
func TestHealthCheck(t *testing.T) {
	t.Parallel()
	hostOnly(t) // the checks are the daemon's; nothing here needs cgroup v2
	d := startDaemon(t, "")
	out, _, code := d.ctl(t, "", "health")
	if code != 0 || !strings.Contains(out, "database  ok") || !strings.Contains(out, "cgroups   ok") || !strings.HasSuffix(out, "status: ok\n") {
		t.Fatalf("sandboxctl health: %d %q", code, out)
	}
	id := d.session(t, nil)

	// A floor no disk has: the data dir is short.
	d.config = "data_dir_min_free_mb = 1000000000\n"
	d.bounce("restart")
	status, body := d.raw(t, "GET", "/v1/health", "")
	var h api.Health
	if err := json.Unmarshal(body, &h); err != nil || status != http.StatusOK || h.Status != api.HealthDegraded ||
		len(h.Reasons) != 1 || !strings.HasPrefix(h.Reasons[0], "data_dir: ") || h.Error != nil ||
		!h.Checks[api.CheckDatabase].OK || !h.Checks[api.CheckCgroups].OK {
		t.Fatalf("health below the floor: %d %s", status, body)
	}
	out, stderr, code := d.ctl(t, "", "health")
	if code != 1 || !strings.Contains(out, "data_dir  FAIL") || !strings.Contains(stderr, "degraded: data_dir: ") {
		t.Fatalf("sandboxctl health below the floor: %d %q %q", code, out, stderr)
	}
	if _, _, code := d.ctl(t, "", "health", "-q"); code != 1 {
		t.Fatalf("sandboxctl health -q: %d", code)
	}
	if e := d.py(t, id, "print(1)"); e.Stdout != "1\n" {
		t.Fatalf("a session of a degraded daemon: %+v", e)
	}
}
