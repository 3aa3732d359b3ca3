package integration

import (
	"os"
	"path/filepath"
	"strings"
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
