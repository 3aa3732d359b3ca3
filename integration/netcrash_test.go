package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/netpolicy"
	"github.com/sandboxd/sandboxd/isolation/network"
)

// Network state that agrees with the record, whatever happens: a daemon
// killed (SIGKILL) during a policy change or a package install starts
// again with every sandbox's rules written from the records.

// sessionRules are the rules of session id's chain in the daemon's table
// (nil, false: no chain).
func sessionRules(t *testing.T, d *daemon, id string) ([]*nftables.Rule, bool) {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	table := &nftables.Table{Family: nftables.TableFamilyINet, Name: "sandboxd-" + d.instance()}
	if _, err := c.ListChain(table, "s_"+id); err != nil {
		return nil, false
	}
	rules, err := c.GetRules(table, &nftables.Chain{Table: table, Name: "s_" + id})
	if err != nil {
		t.Fatal(err)
	}
	return rules, true
}

// heldPolicy is the fingerprint of the policy session id's chain holds
// ("" for no chain): the comment of the first rule that carries one.
func heldPolicy(t *testing.T, d *daemon, id string) string {
	t.Helper()
	rules, _ := sessionRules(t, d, id)
	for _, r := range rules {
		if f, ok := userdata.GetString(r.UserData, userdata.TypeComment); ok && strings.HasPrefix(f, "sandboxd policy ") {
			return f
		}
	}
	return ""
}

// expectRecordInForce checks that the kernel holds session id's recorded
// policy, and that the sandbox reaches the fake internet's web server as
// that policy says (none: not; open: yes; an allowlist: the caller
// probes).
func expectRecordInForce(t *testing.T, d *daemon, f *fakeNet, id, how string) string {
	t.Helper()
	s, err := d.c.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := netpolicy.Parse(s.Network, s.Allow)
	if err != nil {
		t.Fatal(err)
	}
	p.EgressKbps, p.MaxConnections = s.EgressKbps, s.MaxConnections
	held := heldPolicy(t, d, id)
	switch {
	case p.Mode == netpolicy.ModeNone && held == "":
		// No chain: no link either (or one that carries nothing).
	case held != network.Fingerprint(p):
		t.Errorf("%s: the record says %s %v, the kernel holds another policy (%q, want %q)", how, s.Network, s.Allow, held, network.Fingerprint(p))
	}
	switch p.Mode {
	case netpolicy.ModeNone:
		expectProbe(t, d, id, f.Web.String(), "blocked")
	case netpolicy.ModeOpen:
		expectProbe(t, d, id, f.Web.String(), "ok:")
	}
	return s.Network
}

// TestCrashDuringPolicyChange kills the daemon (SIGKILL) at several delays
// after a PATCH from none to open has begun, and starts it again: the
// session's rules in the kernel are its record's, whichever of the two
// the crash left in the record.
func TestCrashDuringPolicyChange(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	f := newFakeNet(t)
	d := netDaemon(t, f, "")
	seen := map[string]int{}
	for _, delay := range []time.Duration{0, 2, 4, 6, 8, 10, 12, 15, 20} {
		delay *= time.Millisecond
		id := d.netSession(t, api.NetworkNone)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = d.c.SetNetwork(context.Background(), id, &api.NetworkRequest{Network: api.NetworkOpen})
		}()
		time.Sleep(delay)
		d.crash()
		<-done
		d.launch()
		how := fmt.Sprintf("killed %v into a PATCH none -> open", delay)
		seen[expectRecordInForce(t, d, f, id, how)]++
		// The next change works, and so does the one after.
		for _, mode := range []string{api.NetworkOpen, api.NetworkNone} {
			if _, err := d.c.SetNetwork(context.Background(), id, &api.NetworkRequest{Network: mode}); err != nil {
				t.Fatalf("%s: PATCH %s: %v", how, mode, err)
			}
			expectRecordInForce(t, d, f, id, how+", then PATCH "+mode)
		}
		if err := d.c.DeleteSession(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("records after the crashes: %v", seen)
}

// TestCrashDuringPackageInstall kills the daemon while a package install
// has the index open to a session of network none: started again, the
// daemon writes the session's rules from its record, and the opening,
// which lived for its install only, is gone.
func TestCrashDuringPackageInstall(t *testing.T) {
	t.Parallel()
	f, index, d := packageIndex(t, "VALUE = 1\n", "")
	id := d.netSession(t, api.NetworkNone)
	// pip takes a second or more to start: the opening is in the kernel
	// meanwhile.
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = d.c.InstallPackages(context.Background(), id, &api.PackagesRequest{Packages: []string{"sbxdemo==1.0"}, IndexURL: index}, nil)
	}()
	web := f.Web.AsSlice()
	opened := func() bool {
		rules, _ := sessionRules(t, d, id)
		for _, r := range rules {
			for _, e := range r.Exprs {
				if c, ok := e.(*expr.Cmp); ok && bytes.Equal(c.Data, web) {
					return true
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(20 * time.Second)
	for !opened() {
		if time.Now().After(deadline) {
			t.Fatal("the install never opened the index to the session")
		}
		time.Sleep(5 * time.Millisecond)
	}
	d.crash()
	<-done
	d.launch()
	if opened() {
		t.Error("the index's opening outlived its install")
	}
	expectRecordInForce(t, d, f, id, "killed during a package install")
}

// largeAllow is an allow list of n entries of kind ("cidr", "port",
// "name", "mixed"), the last of which opens the fake internet's web
// server (by address, or as web.test for names).
func largeAllow(f *fakeNet, kind string, n int) []string {
	var out []string
	for i := 0; len(out) < n-1; i++ {
		// TEST-NET-3: listed, never sent to.
		a := fmt.Sprintf("203.0.113.%d", i%256)
		k := kind
		if k == "mixed" {
			k = []string{"cidr", "port", "name"}[i%3]
		}
		switch k {
		case "cidr":
			out = append(out, a+"/32")
		case "port":
			out = append(out, fmt.Sprintf("%s:%d", a, 1+i/256))
		case "name":
			out = append(out, fmt.Sprintf("h%d.example.com", i))
		}
	}
	switch kind {
	case "port":
		return append(out, f.Web.String()+":80")
	case "name":
		return append(out, "web.test")
	}
	return append(out, f.Web.String()+"/32")
}

// TestNetworkLargeAllowLists: allow lists of the largest size the API
// takes, of each kind, by create and by PATCH, are put in force whole and
// enforced (they answered 500 from 160 /32 entries on).
func TestNetworkLargeAllowLists(t *testing.T) {
	t.Parallel()
	hostOnly(t)
	f := newFakeNet(t)
	f.SetRecord("web.test", time.Minute, f.Web)
	d := netDaemon(t, f, "")
	ctx := context.Background()
	for _, kind := range []string{"cidr", "port", "name", "mixed"} {
		allow := largeAllow(f, kind, netpolicy.MaxEntries)
		id := d.netSession(t, api.NetworkAllowlist, allow...)
		target := f.Web.String()
		if kind == "name" {
			target = "web.test"
		}
		expectProbe(t, d, id, target, "ok:")
		expectProbe(t, d, id, f.Other.String(), "blocked")
		if got := heldPolicy(t, d, id); got == "" {
			t.Errorf("%s: no policy in the kernel", kind)
		}
		// By PATCH: to none, and back to the list.
		for _, mode := range []string{api.NetworkNone, api.NetworkAllowlist} {
			req := &api.NetworkRequest{Network: mode}
			if mode == api.NetworkAllowlist {
				req.Allow = allow
			}
			if _, err := d.c.SetNetwork(ctx, id, req); err != nil {
				t.Fatalf("%s: PATCH %s with %d entries: %v", kind, mode, len(req.Allow), err)
			}
		}
		expectProbe(t, d, id, target, "ok:")
		expectRecordInForce(t, d, f, id, kind+" list after PATCH")
		if err := d.c.DeleteSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}
