package daemon

import (
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

func TestResolveLimits(t *testing.T) {
	c := config.Default()
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	in := func(v int) *int { return &v }
	cases := []struct {
		name string
		req  api.CreateSessionRequest
		ok   bool
	}{
		{"defaults", api.CreateSessionRequest{}, true},
		{"all set", api.CreateSessionRequest{MemoryMB: i64(64), CPUs: f64(0.5), Pids: i64(32), DiskMB: i64(16), TimeoutS: in(5), IdleTimeoutS: in(0)}, true},
		{"memory too small", api.CreateSessionRequest{MemoryMB: i64(1)}, false},
		{"memory too big", api.CreateSessionRequest{MemoryMB: i64(1 << 30)}, false},
		{"cpus zero", api.CreateSessionRequest{CPUs: f64(0)}, false},
		{"cpus over", api.CreateSessionRequest{CPUs: f64(1000)}, false},
		{"pids too few", api.CreateSessionRequest{Pids: i64(2)}, false},
		{"disk zero", api.CreateSessionRequest{DiskMB: i64(0)}, false},
		{"disk below the minimum", api.CreateSessionRequest{DiskMB: i64(15)}, false},
		{"timeout zero", api.CreateSessionRequest{TimeoutS: in(0)}, false},
		{"idle negative", api.CreateSessionRequest{IdleTimeoutS: in(-1)}, false},
	}
	for _, tc := range cases {
		l, err := resolveLimits(&c, c.Defaults.API(), requestLimits(&tc.req))
		if tc.ok != (err == nil) {
			t.Errorf("%s: %+v %v", tc.name, l, err)
		}
		if err != nil && !errdefs.IsInvalidArgument(err) {
			t.Errorf("%s: wrong class %v", tc.name, err)
		}
	}
	if l, _ := resolveLimits(&c, c.Defaults.API(), nil); l != c.Defaults.API() {
		t.Fatalf("defaults: %+v", l)
	}
}

func TestCheckEnvAndLabels(t *testing.T) {
	if checkEnv(map[string]string{"OK": "v"}) != nil || checkEnv(map[string]string{"A=B": ""}) == nil || checkEnv(map[string]string{"": "x"}) == nil || checkEnv(map[string]string{"A": "\x00"}) == nil {
		t.Fatal("env checks")
	}
	if api.CheckLabels(map[string]string{"a": "b"}) != nil || api.CheckLabels(map[string]string{"": "b"}) == nil || api.CheckLabels(map[string]string{"a=b": ""}) == nil {
		t.Fatal("label checks")
	}
}
