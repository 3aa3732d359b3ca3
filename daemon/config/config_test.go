package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestLoad(t *testing.T) {
	cases := []struct {
		name, body, wantErr string
	}{
		{"empty", "", ""},
		{"the shipped example", mustRead(t, "../../contrib/config.toml"), ""},
		{"unknown key", "# c\nmax_sesions = 3\n", `c.toml:2: unknown key "max_sesions"`},
		{"unknown key in a table", "socket = \"/x\"\n\n[seccomp]\nbogus = 1\n", `c.toml:4: unknown key "seccomp.bogus"`},
		{"syntax error with its line", "socket = \"/x\"\nmax_sessions = = 3\n", "c.toml:2:"},
		{"wrong type", "\nmax_sessions = \"many\"\n", "c.toml:2: max_sessions: incompatible types"},
		{"root sandbox", "sandbox_uid = 0\n", "c.toml:1: sandbox_uid"},
		{"bad value", "history_limit = 3\nmax_sessions = -5\n", "c.toml:2: max_sessions must be above 0"},
		{"defaults over max", "[defaults]\nmemory_mb = 100000\n", "c.toml:2: defaults.memory_mb"},
		{"two problems, two lines", "max_sessions = 0\nhistory_limit = 0\n", "c.toml:2: history_limit"},
		{"a problem of a value not set", "[max]\nmemory_mb = 64\n", "c.toml: defaults.memory_mb"},
		{"unknown syscall", "[seccomp]\nallow = [\"nope\"]\n", "unknown system call"},
		{"an MCP server", "[mcp.servers.tools]\ncommand = [\"/bin/tool\"]\ntools = [\"a\"]\n", ""},
		{"an MCP server without tools", "[mcp.servers.tools]\ncommand = [\"/bin/tool\"]\n", "mcp.servers.tools: list the tools"},
		{"an MCP server's unknown key", "[mcp.servers.tools]\ncmd = [\"/bin/tool\"]\n", `c.toml:2: unknown key "mcp.servers.tools.cmd"`},
		{"pool share at the total", "pool_max_total = 4\npool_share_per_uid = 4\n", ""},
		{"pool share 0 is the default", "pool_share_per_uid = 0\n", ""},
		{"pool share over the total", "pool_max_total = 4\npool_share_per_uid = 5\n", "c.toml:2: pool_share_per_uid must be between 0 (half of pool_max_total) and pool_max_total (4)"},
		{"pool share over the default total", "pool_share_per_uid = 33\n", "c.toml:1: pool_share_per_uid must be between 0"},
		{"negative pool share", "pool_share_per_uid = -1\n", "c.toml:1: pool_share_per_uid must be between 0"},
		{"no disk floor", "data_dir_min_free_mb = 0\ndisk_overcommit = 50.0\n", ""},
		{"negative disk floor", "data_dir_min_free_mb = -1\n", "c.toml:1: data_dir_min_free_mb must be 0"},
		{"disk undercommit", "disk_overcommit = 0.5\n", "c.toml:1: disk_overcommit must be 1"},
		{"disk share a quarter", "disk_share_per_uid = 0.25\n", ""},
		{"disk share 0 is the default", "disk_share_per_uid = 0\n", ""},
		{"disk share over 1", "disk_share_per_uid = 1.5\n", "c.toml:1: disk_share_per_uid must be between 0 (half) and 1"},
		{"negative disk share", "disk_share_per_uid = -0.1\n", "c.toml:1: disk_share_per_uid must be between 0"},
		{"lxcfs off", "lxcfs_dir = \"\"\n", ""},
		{"lxcfs elsewhere", "lxcfs_dir = \"/run/lxcfs\"\n", ""},
		{"lxcfs relative", "lxcfs_dir = \"var/lib/lxcfs\"\n", "c.toml:1: lxcfs_dir must be an absolute path"},
		{"pool share with no pools", "pool_max_total = 0\npool_size = 0\npool_share_per_uid = 1\n", "c.toml:3: pool_share_per_uid"},
		{"node labels", "[node]\nlabels = {zone = \"a\", rack = \"r7\"}\n", ""},
		{"node labels as a table", "[node.labels]\nzone = \"a\"\n", ""},
		{"bad node label", "[node]\nlabels = {\"a=b\" = \"x\"}\n", "c.toml:2: node.labels: bad label \"a=b\""},
		{"node label not a string", "[node]\nlabels = {zone = 1}\n", "incompatible types"},
		{"unknown node key", "[node]\nlabls = {}\n", `c.toml:2: unknown key "node.labls"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.toml")
			os.WriteFile(p, []byte(c.body), 0o644)
			_, err := Load(p)
			if c.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("got %v, want %q", err, c.wantErr)
			}
		})
	}
}

// TestNodeLabels: [node] labels reach the config, either way TOML writes
// a table; none is an empty map, never nil.
func TestNodeLabels(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       map[string]string
	}{
		{"none", "", map[string]string{}},
		{"inline", "[node]\nlabels = {zone = \"a\", rack = \"r7\"}\n", map[string]string{"zone": "a", "rack": "r7"}},
		{"table", "[node.labels]\nzone = \"a\"\n", map[string]string{"zone": "a"}},
		{"empty", "[node]\nlabels = {}\n", map[string]string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.toml")
			os.WriteFile(p, []byte(c.body), 0o644)
			cfg, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Node.Labels == nil || !reflect.DeepEqual(cfg.Node.Labels, c.want) {
				t.Fatalf("labels %#v, want %v", cfg.Node.Labels, c.want)
			}
		})
	}
}

func mustRead(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestShippedConfigIsTheDefaults checks contrib/config.toml sets every key
// to its default: decoded over an empty Config it gives Default (but
// max.cpus, which is the host's CPU count).
func TestShippedConfigIsTheDefaults(t *testing.T) {
	var c Config
	if _, err := toml.Decode(mustRead(t, "../../contrib/config.toml"), &c); err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Max.CPUs = c.Max.CPUs
	// id_base stands commented out, with its default: set, it pins the
	// range (see the file).
	if !strings.Contains(mustRead(t, "../../contrib/config.toml"), fmt.Sprintf("# id_base = %d\n", want.UserNS.IDBase)) {
		t.Fatal("contrib/config.toml does not show id_base's default commented out")
	}
	c.UserNS.IDBase = want.UserNS.IDBase
	want.Seccomp.Allow, want.Seccomp.Deny = []string{}, []string{}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("contrib/config.toml differs from the defaults:\n got %+v\nwant %+v", c, want)
	}
}

// TestPoolShare: pool_share_per_uid when set, else half of pool_max_total
// rounded up, so at least 1 while there are pools at all.
func TestPoolShare(t *testing.T) {
	cases := []struct{ total, share, want int }{
		{32, 0, 16},
		{33, 0, 17},
		{1, 0, 1},
		{0, 0, 0},
		{32, 5, 5},
		{32, 32, 32},
	}
	for _, c := range cases {
		cfg := Default()
		cfg.PoolSize, cfg.PoolMaxTotal, cfg.PoolSharePerUID = 0, c.total, c.share
		if err := cfg.Validate(); err != nil {
			t.Errorf("pool_max_total %d, pool_share_per_uid %d: %v", c.total, c.share, err)
			continue
		}
		if got := cfg.PoolShare(); got != c.want {
			t.Errorf("pool_max_total %d, pool_share_per_uid %d: share %d, want %d", c.total, c.share, got, c.want)
		}
	}
}
