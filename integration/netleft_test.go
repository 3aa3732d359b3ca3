package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"

	"github.com/sandboxd/sandboxd/isolation/network"
)

// subnetLeaseDir is where every sandboxd of the host leases its subnet.
const subnetLeaseDir = "/run/sandboxd-subnets"

// assertNoNetworkLeft checks a stopped daemon with no session left has no
// nftables table, sandbox link or subnet lease on the host.
func assertNoNetworkLeft(t testing.TB, instance string) {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := c.ListTableOfFamily("sandboxd-"+instance, nftables.TableFamilyINet); err == nil {
		t.Errorf("the daemon's nftables table is left")
		c.DelTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "sandboxd-" + instance})
		_ = c.Flush()
	}
	for name, id := range ownLinks(t, instance) {
		t.Errorf("the link %s of session %s is left", name, id)
		if l, err := netlink.LinkByName(name); err == nil {
			_ = netlink.LinkDel(l)
		}
	}
	lease := filepath.Join(subnetLeaseDir, instance+".json")
	if _, err := os.Stat(lease); err == nil {
		t.Errorf("the daemon kept its subnet lease with no session left")
		_ = os.Remove(lease)
	}
}

// ownLinks are the host's sandbox links of the daemon instance (name →
// session), by their alias "sandboxd/<instance>/<session>".
func ownLinks(t testing.TB, instance string) map[string]string {
	t.Helper()
	links, err := network.Consistent(netlink.LinkList)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range links {
		if id, ok := strings.CutPrefix(l.Attrs().Alias, "sandboxd/"+instance+"/"); ok {
			out[l.Attrs().Name] = id
		}
	}
	return out
}

// instances are the daemon instances this run started, each with the
// first test that started it.
var instances = struct {
	sync.Mutex
	test map[string]string
}{test: map[string]string{}}

func started(t testing.TB, instance string) {
	instances.Lock()
	defer instances.Unlock()
	if _, ok := instances.test[instance]; !ok {
		instances.test[instance] = t.Name()
	}
}

// sweepTables fails the run (code 1) if a daemon it started left its
// nftables table, and deletes the table: the table of a daemon that is
// gone guards a port any program may have since taken.
func sweepTables(code int) int {
	c, err := nftables.New()
	if err != nil {
		return code
	}
	instances.Lock()
	defer instances.Unlock()
	for inst, test := range instances.test {
		name := "sandboxd-" + inst
		if _, err := c.ListTableOfFamily(name, nftables.TableFamilyINet); err != nil {
			continue
		}
		fmt.Fprintf(os.Stderr, "integration: the nftables table %s of a daemon %s started is left\n", name, test)
		c.DelTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: name})
		_ = c.Flush()
		code = 1
	}
	return code
}
