package network

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Attachment is where one sandbox sits on the daemon's network. It
// follows from the session id and its slot alone, so the daemon keeps
// only the slot.
type Attachment struct {
	Slot uint32
	// Link is the host side of the sandbox's veth pair; the sandbox sees
	// eth0.
	Link string
	// Addr is the sandbox's address, Gateway the host side's (the
	// sandbox's route); Addr6 and Gateway6 are invalid without IPv6.
	Addr, Gateway   netip.Addr
	Addr6, Gateway6 netip.Addr
}

// Plan is the attachment of session id in slot.
func (m *Manager) Plan(id string, slot uint32) *Attachment {
	base := binary.BigEndian.Uint32(m.cfg.Subnet.Masked().Addr().AsSlice()) + slot*4
	v4 := func(n uint32) netip.Addr { return netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, base+n))) }
	a := &Attachment{
		Slot:    slot,
		Link:    m.linkName(id),
		Addr:    v4(2),
		Gateway: v4(1),
	}
	if m.cfg.Subnet6.IsValid() {
		v6 := func(a netip.Addr) netip.Addr {
			b := m.cfg.Subnet6.Masked().Addr().As16()
			copy(b[12:], a.AsSlice())
			return netip.AddrFrom16(b)
		}
		a.Addr6, a.Gateway6 = v6(a.Addr), v6(a.Gateway)
	}
	return a
}

// linkName is the host side's name: unique to the instance and session,
// within the 15 bytes an interface name may have.
func (m *Manager) linkName(id string) string {
	h := sha256.Sum256([]byte(m.cfg.Instance + "/" + id))
	return "sbx" + hex.EncodeToString(h[:6])
}

// alias marks the daemon's links: the instance's, and the session's.
func (m *Manager) alias(id string) string { return "sandboxd/" + m.cfg.Instance + "/" + id }

// nsSysctls sets the sysctls of a sandbox's namespace, from a thread that
// enters it (/proc/sys/net is the namespace's of the thread that opens
// it): no IPv6 at all without it, and never an address or route from a
// router advertisement.
func nsSysctls(ns netns.NsHandle, v6 bool) error {
	set := map[string]string{}
	if v6 {
		for _, c := range []string{"all", "default", "lo", "eth0"} {
			set["ipv6/conf/"+c+"/accept_ra"] = "0"
			set["ipv6/conf/"+c+"/autoconf"] = "0"
		}
	} else {
		set["ipv6/conf/all/disable_ipv6"] = "1"
		set["ipv6/conf/default/disable_ipv6"] = "1"
	}
	errc := make(chan error, 1)
	go func() {
		// Never back to the host's namespace: the thread dies with the
		// goroutine rather than serve others from the sandbox's.
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("enter the sandbox's network namespace: %w", err)
			return
		}
		for k, v := range set {
			if err := os.WriteFile("/proc/sys/net/"+k, []byte(v), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				errc <- fmt.Errorf("sysctl net.%s: %w", strings.ReplaceAll(k, "/", "."), err)
				return
			}
		}
		errc <- nil
	}()
	return <-errc
}

// linked reports whether the sandbox's namespace has its eth0, and the
// host its side: a sandbox restarted in a new namespace has neither
// (its previous namespace, and with it the pair, went with the previous
// sandbox).
func (m *Manager) linked(id string, ns netns.NsHandle, a *Attachment) bool {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return false
	}
	defer h.Close()
	if _, err := h.LinkByName("eth0"); err != nil {
		return false
	}
	l, err := netlink.LinkByName(a.Link)
	return err == nil && l.Attrs().Alias == m.alias(id)
}

// makeLink joins the sandbox's namespace to the host: the veth pair,
// addresses, the sandbox's default route.
func (m *Manager) makeLink(id string, ns netns.NsHandle, a *Attachment) error {
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: a.Link},
		PeerName:      "eth0",
		PeerNamespace: netlink.NsFd(int(ns)),
	}
	// The link of the session's previous sandbox may still be on its way
	// out with that sandbox's namespace.
	var err error
	for i := 0; i < 50; i++ {
		if err = netlink.LinkAdd(veth); !errors.Is(err, unix.EEXIST) {
			break
		}
		_ = m.removeLink(id)
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("add veth %s: %w", a.Link, err)
	}
	host, err := netlink.LinkByName(a.Link)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetAlias(host, m.alias(id)); err != nil {
		return err
	}
	if a.Addr6.IsValid() {
		_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+a.Link+"/accept_ra", []byte("0"), 0o644)
	} else {
		_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+a.Link+"/disable_ipv6", []byte("1"), 0o644)
	}
	if err := addAddrs(&netlink.Handle{}, host, a.Gateway, a.Gateway6); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return err
	}

	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return err
	}
	eth, err := h.LinkByName("eth0")
	if err != nil {
		return err
	}
	if err := addAddrs(h, eth, a.Addr, a.Addr6); err != nil {
		return err
	}
	if err := h.LinkSetUp(eth); err != nil {
		return err
	}
	for _, gw := range []netip.Addr{a.Gateway, a.Gateway6} {
		if !gw.IsValid() {
			continue
		}
		if err := h.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.IP(gw.AsSlice())}); err != nil {
			return fmt.Errorf("default route via %s: %w", gw, err)
		}
	}
	return nil
}

// addAddrs gives a link its /30 and /126.
func addAddrs(h *netlink.Handle, l netlink.Link, v4, v6 netip.Addr) error {
	for _, a := range []netip.Addr{v4, v6} {
		if !a.IsValid() {
			continue
		}
		bits, flags := 30, 0
		if a.Is6() {
			bits, flags = 126, unix.IFA_F_NODAD
		}
		p := netip.PrefixFrom(a, bits)
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, a.BitLen())}, Flags: flags}
		if err := h.AddrAdd(l, addr); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("address %s: %w", p, err)
		}
	}
	return nil
}

// removeLink deletes the host side of a sandbox's veth (the kernel
// deletes its peer), if it is still there and the daemon's.
func (m *Manager) removeLink(id string) error {
	l, err := netlink.LinkByName(m.linkName(id))
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return err
	}
	// Not ours: a hash clash with another daemon's. One of no alias is
	// ours, made by a daemon that died before it could name it.
	if alias := l.Attrs().Alias; alias != m.alias(id) && alias != "" {
		return nil
	}
	// It may be going already, with its sandbox's namespace.
	if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return err
	}
	return nil
}

// ownLinks are the session ids of the daemon's links on the host.
func (m *Manager) ownLinks() ([]string, error) {
	links, err := Consistent(netlink.LinkList)
	if err != nil {
		return nil, err
	}
	prefix := "sandboxd/" + m.cfg.Instance + "/"
	var ids []string
	for _, l := range links {
		if id, ok := strings.CutPrefix(l.Attrs().Alias, prefix); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
