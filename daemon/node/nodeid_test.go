package node

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLoadNodeID: the node_id file first, else the machine id with the
// instance, else random and stored.
func TestLoadNodeID(t *testing.T) {
	uuid4 := regexp.MustCompile(`^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$`)
	for _, c := range []struct {
		name      string
		file      string // the data dir's node_id ("": none)
		machineID string // /etc/machine-id ("": none)
		instance  string
		want      string // "" with random: any v4 id
		random    bool   // made at random, and stored
		wantErr   string
	}{
		// With no instance it is systemd's own: `systemd-id128
		// machine-id --app-specific=181ac04af9c94a808007b5babf2a3ac1` on
		// a host of this machine id.
		{name: "systemd's app-specific id", machineID: testMachineID, want: "0b4c6d8e13244216a7a799e14512ff66"},
		{name: "with the instance", machineID: testMachineID, instance: "test", want: testNodeID},
		{name: "another daemon of the host", machineID: testMachineID, instance: "other", want: "c79fc97991dd4cc3b0e424916619e8b4"},
		{name: "uppercase machine id", machineID: strings.ToUpper(testMachineID), instance: "test", want: testNodeID},
		{name: "set by the operator", file: "nomad-client-7\n", machineID: testMachineID, want: "nomad-client-7"},
		{name: "no machine id", instance: "test", random: true},
		{name: "first boot", machineID: "uninitialized", instance: "test", random: true},
		{name: "zero machine id", machineID: "00000000000000000000000000000000", instance: "test", random: true},
		{name: "short machine id", machineID: "0123", instance: "test", random: true},
		{name: "bad node_id", file: "a b\n", machineID: testMachineID, wantErr: "holds no valid node id"},
		{name: "empty node_id", file: "\n", machineID: testMachineID, wantErr: "holds no valid node id"},
		{name: "node_id of a path", file: "../x", machineID: testMachineID, wantErr: "holds no valid node id"},
		{name: "node_id too long", file: strings.Repeat("a", 129), machineID: testMachineID, wantErr: "holds no valid node id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dataDir, etc := t.TempDir(), t.TempDir()
			machine := filepath.Join(etc, "machine-id")
			if c.machineID != "" {
				writeFile(t, machine, c.machineID+"\n")
			}
			if c.file != "" {
				writeFile(t, filepath.Join(dataDir, nodeIDFile), c.file)
			}
			got, err := loadNodeID(dataDir, c.instance, machine)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %q %v, want error %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := os.ReadFile(filepath.Join(dataDir, nodeIDFile))
			switch {
			case c.random:
				if !uuid4.MatchString(got) || strings.TrimSpace(string(stored)) != got {
					t.Fatalf("random id %q, stored %q", got, stored)
				}
				again, err := loadNodeID(dataDir, c.instance, machine)
				if err != nil || again != got {
					t.Fatalf("a second start: %q %v, want %q", again, err, got)
				}
			case got != c.want:
				t.Fatalf("got %q, want %q", got, c.want)
			case c.file == "" && stored != nil:
				// A derived id is not stored: a copied data dir gets the
				// id of the machine it is copied to.
				t.Fatalf("a derived id was stored: %q", stored)
			}
		})
	}
}

// TestMemoryMB reads MemTotal, in MiB.
func TestMemoryMB(t *testing.T) {
	for _, c := range []struct {
		name, meminfo string
		want          int64
		wantErr       string
	}{
		{"usual", "MemTotal:       24684092 kB\nMemFree:         1000 kB\n", 24105, ""},
		{"not first", "Foo: 1 kB\nMemTotal: 2097152 kB\n", 2048, ""},
		{"no line", "MemFree: 1 kB\n", 0, "has no MemTotal line"},
		{"bad number", "MemTotal: lots kB\n", 0, "bad MemTotal line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &Host{Meminfo: filepath.Join(t.TempDir(), "meminfo")}
			writeFile(t, h.Meminfo, c.meminfo)
			got, err := h.memoryMB()
			if got != c.want || (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("got %d %v, want %d %q", got, err, c.want, c.wantErr)
			}
		})
	}
}
