package network

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/sandboxd/sandboxd/isolation/lease"
)

// Several daemons can run on one host, and no two may give sandboxes the
// same addresses: each leases its subnet in a folder all share (one file
// per instance, package lease, as the id ranges of package idmap), and a
// lease lives as long as its daemon's data dir names the instance.

// SubnetLease is what a daemon asks of the lease folder.
type SubnetLease struct {
	Dir, Instance, DataDir string
	// Want is the configured subnet, a /16; Move takes the next free /16
	// of the same /8 when another daemon (or the host's own network) has
	// it, instead of failing.
	Want netip.Prefix
	Move bool
}

type subnetLease struct {
	lease.Owner
	Subnet string `json:"subnet"`
}

// prefix is the lease's subnet; ok is false for a file this code did not
// write.
func (l subnetLease) prefix() (p netip.Prefix, ok bool) {
	p, err := netip.ParsePrefix(l.Subnet)
	return p, err == nil
}

// Lease takes the daemon's subnet and returns it.
func (req SubnetLease) Lease() (netip.Prefix, error) {
	if req.Want.Bits() != 16 || !req.Want.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("[network] subnet %s must be an IPv4 /16", req.Want)
	}
	if err := os.MkdirAll(req.Dir, 0o700); err != nil {
		return netip.Prefix{}, fmt.Errorf("subnet leases: %w", err)
	}
	unlock, err := lease.LockDir(req.Dir)
	if err != nil {
		return netip.Prefix{}, err
	}
	defer unlock()
	taken, mine, err := readSubnetLeases(req.Dir, req.Instance)
	if err != nil {
		return netip.Prefix{}, err
	}
	host, err := hostPrefixes(req.Instance)
	if err != nil {
		return netip.Prefix{}, err
	}
	free := func(p netip.Prefix) string {
		for owner, q := range taken {
			if p.Overlaps(q) {
				return "the sandboxd whose data dir is " + owner
			}
		}
		for _, q := range host {
			if p.Overlaps(q) {
				return "the host's network " + q.String()
			}
		}
		return ""
	}
	got := req.Want.Masked()
	if mine.IsValid() && req.Move && free(mine) == "" {
		got = mine // a moved daemon keeps where it moved to
	}
	if who := free(got); who != "" {
		if !req.Move {
			return netip.Prefix{}, fmt.Errorf("[network] subnet %s overlaps %s: give this daemon another subnet", got, who)
		}
		b := got.Addr().As4()
		found := false
		for n := int(b[1]) + 1; n < 256; n++ {
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{b[0], byte(n), 0, 0}), 16)
			if free(p) == "" {
				got, found = p, true
				break
			}
		}
		if !found {
			return netip.Prefix{}, fmt.Errorf("no /16 after %s is free on this host: set [network] subnet", req.Want)
		}
	}
	data, err := json.Marshal(subnetLease{lease.Owner{Instance: req.Instance, DataDir: req.DataDir}, got.String()})
	if err != nil {
		return netip.Prefix{}, err
	}
	tmp := filepath.Join(req.Dir, "."+req.Instance+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return netip.Prefix{}, err
	}
	return got, os.Rename(tmp, filepath.Join(req.Dir, req.Instance+".json"))
}

// ReleaseSubnet gives the daemon's subnet back, for a daemon with no
// session left: a lease of idmap's kind, released as they all are.
func ReleaseSubnet(dir, instance string) error { return lease.Release(dir, instance) }

// readSubnetLeases reads the live leases of other daemons (by data dir),
// and the instance's own, removing stale ones.
func readSubnetLeases(dir, instance string) (others map[string]netip.Prefix, mine netip.Prefix, err error) {
	valid := func(l subnetLease) bool { _, ok := l.prefix(); return ok }
	live, own, err := lease.Read(dir, instance, valid)
	if err != nil {
		return nil, netip.Prefix{}, err
	}
	others = map[string]netip.Prefix{}
	for _, l := range live {
		others[l.DataDir], _ = l.prefix()
	}
	if own != nil {
		mine, _ = own.prefix()
	}
	return others, mine, nil
}

// hostPrefixes are the IPv4 networks of the host's links, but for the
// instance's own sandbox links. Other daemons' count: a daemon gone with
// its sandboxes left running still holds their addresses.
func hostPrefixes(instance string) ([]netip.Prefix, error) {
	links, err := Consistent(netlink.LinkList)
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Alias, "sandboxd/"+instance+"/") {
			continue
		}
		addrs, err := Consistent(func() ([]netlink.Addr, error) { return netlink.AddrList(l, netlink.FAMILY_V4) })
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP.To4())
			if !ok {
				continue
			}
			bits, _ := a.Mask.Size()
			if ip.IsLoopback() {
				continue
			}
			out = append(out, netip.PrefixFrom(ip, bits).Masked())
		}
	}
	return out, nil
}
