package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetricsAddr: metrics_addr is "" (off) or HOST:PORT with an IP or
// localhost for host; anything else fails the config check with one line
// that names the file's line and says what to write.
func TestMetricsAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"", true},
		{"127.0.0.1:9464", true},
		{"127.0.0.1:0", true},
		{"[::1]:9464", true},
		{"localhost:9464", true},
		{"0.0.0.0:9464", true},
		{"[fe80::1%eth0]:9464", true},
		{"9464", false},
		{":9464", false},
		{"127.0.0.1", false},
		{"127.0.0.1:", false},
		{"127.0.0.1:http", false},
		{"127.0.0.1:65536", false},
		{"127.0.0.1:09464", false},
		{"::1:9464", false},
		{"metrics.example:9464", false},
		{"http://127.0.0.1:9464", false},
	} {
		err := checkMetricsAddr(tc.addr)
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok %v", tc.addr, err, tc.ok)
		}
		if err != nil && (!strings.HasPrefix(err.Error(), "metrics_addr ") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%q: %q is not one line about metrics_addr", tc.addr, err)
		}
	}
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte("log_level = \"info\"\nmetrics_addr = \"9464\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":2: metrics_addr \"9464\"") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a bad metrics_addr in a file: %v", err)
	}
	if err := os.WriteFile(path, []byte("metrics_addr = \"127.0.0.1:9464\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(path); err != nil || c.MetricsAddr != "127.0.0.1:9464" {
		t.Fatalf("metrics_addr from a file: %q %v", c.MetricsAddr, err)
	}
	if Default().MetricsAddr != "" {
		t.Fatal("metrics_addr is on by default")
	}
}
