package network

import (
	"encoding/binary"
	"errors"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The expressions the daemon's rules are made of: nft's own syntax,
// spelled out as the kernel's registers and payload offsets (what the nft
// command compiles "iifname @links", "ip daddr 10.0.0.0/8" to).

// reg is the 16-byte register every match loads into; reg32 the first of
// the 4-byte ones that concatenations (address . port) fill in order.
const (
	reg   = 1
	reg32 = 8
)

func inSet(key expr.MetaKey, s *nftables.Set) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: key, Register: reg},
		&expr.Lookup{SourceRegister: reg, SetName: s.Name, SetID: s.ID},
	}
}

// fromLinks matches packets that came in on a sandbox link.
func fromLinks(links *nftables.Set) []expr.Any { return inSet(expr.MetaKeyIIFNAME, links) }

// toLinks matches packets about to go out on a sandbox link.
func toLinks(links *nftables.Set) []expr.Any { return inSet(expr.MetaKeyOIFNAME, links) }

// notIIF matches packets that did not come in on the interface name.
func notIIF(name string) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: reg},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg, Data: ifname(name)},
	}
}

func family(v6 bool) []expr.Any {
	f := byte(unix.NFPROTO_IPV4)
	if v6 {
		f = unix.NFPROTO_IPV6
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: []byte{f}},
	}
}

// daddr loads the destination address into register r.
func daddr(v6 bool, r uint32) []expr.Any { return addr(v6, false, r) }

// addr loads the source or destination address into register r.
func addr(v6, src bool, r uint32) []expr.Any {
	off, n := uint32(16), uint32(4)
	if v6 {
		off, n = 24, 16
	}
	if src {
		off -= n
	}
	return append(family(v6), &expr.Payload{DestRegister: r, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n})
}

func l4proto(p byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: []byte{p}},
	}
}

// dport loads a TCP or UDP destination port into register r.
func dport(r uint32) *expr.Payload {
	return &expr.Payload{DestRegister: r, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}
}

func isNotFound(err error) bool { return errors.Is(err, unix.ENOENT) }

func port(p uint16) []byte { return binary.BigEndian.AppendUint16(nil, p) }

// dportIs matches protocol p to port n.
func dportIs(p byte, n uint16) []expr.Any {
	return append(l4proto(p), dport(reg), &expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: port(n)})
}

// ctState matches connections in any of the states bits.
func ctState(bits uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: reg, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: reg, DestRegister: reg, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, bits), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg, Data: make([]byte, 4)},
	}
}

// daddrIn matches a destination inside p.
func daddrIn(p netip.Prefix) []expr.Any { return addrIn(p, false) }

// saddrIn matches a source inside p.
func saddrIn(p netip.Prefix) []expr.Any { return addrIn(p, true) }

func addrIn(p netip.Prefix, src bool) []expr.Any {
	v6 := p.Addr().Is6()
	e := addr(v6, src, reg)
	if p.Bits() < p.Addr().BitLen() {
		mask := netip.PrefixFrom(p.Addr(), p.Bits())
		e = append(e, &expr.Bitwise{SourceRegister: reg, DestRegister: reg, Len: uint32(p.Addr().BitLen() / 8),
			Mask: prefixMask(mask), Xor: make([]byte, p.Addr().BitLen()/8)})
	}
	return append(e, &expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: p.Masked().Addr().AsSlice()})
}

func prefixMask(p netip.Prefix) []byte {
	b := make([]byte, p.Addr().BitLen()/8)
	for i := range p.Bits() {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return b
}

// daddrInSet matches a destination address in s (of v6's family).
func daddrInSet(v6 bool, s *nftables.Set) []expr.Any {
	return append(daddr(v6, reg), &expr.Lookup{SourceRegister: reg, SetName: s.Name, SetID: s.ID})
}

// daddrPortInSet matches (destination, port) of protocol p in s, a set of
// address . inet_service.
func daddrPortInSet(v6 bool, p byte, s *nftables.Set) []expr.Any {
	e := append(l4proto(p), daddr(v6, reg32)...)
	next := uint32(reg32 + 1)
	if v6 {
		next = reg32 + 4
	}
	return append(e, dport(next), &expr.Lookup{SourceRegister: reg32, SetName: s.Name, SetID: s.ID})
}

// addrPortKey is the key of address . port in a concatenated set: each
// part padded to 4 bytes.
func addrPortKey(a netip.Addr, p uint16) []byte {
	return append(a.AsSlice(), port(p)[0], port(p)[1], 0, 0)
}

// ifname is the key of an interface name in an ifname set.
func ifname(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}

var (
	accept = &expr.Verdict{Kind: expr.VerdictAccept}
	drop   = &expr.Verdict{Kind: expr.VerdictDrop}
	// refuse answers a refused packet with ICMP administratively
	// prohibited, so that code in the sandbox fails at once rather than
	// after a connect timeout.
	refuse = &expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED}
)

func rule(t *nftables.Table, c *nftables.Chain, e ...[]expr.Any) *nftables.Rule {
	var all []expr.Any
	for _, x := range e {
		all = append(all, x...)
	}
	return &nftables.Rule{Table: t, Chain: c, Exprs: all}
}

func one(e ...expr.Any) []expr.Any { return e }

// prefixElements are the elements of an interval set holding ps (which
// must not overlap).
func prefixElements(ps []netip.Prefix) []nftables.SetElement {
	var el []nftables.SetElement
	for _, p := range ps {
		p = p.Masked()
		el = append(el, nftables.SetElement{Key: p.Addr().AsSlice()})
		if end, ok := after(p); ok {
			el = append(el, nftables.SetElement{Key: end.AsSlice(), IntervalEnd: true})
		}
	}
	return el
}

// after is the first address after p, if there is one.
func after(p netip.Prefix) (netip.Addr, bool) {
	b := p.Masked().Addr().AsSlice()
	host := len(b)*8 - p.Bits()
	inc := uint(1) << (host % 8)
	for i := len(b) - 1 - host/8; i >= 0; i-- {
		v := uint(b[i]) + inc
		b[i] = byte(v)
		if v <= 0xff {
			a, _ := netip.AddrFromSlice(b)
			return a, true
		}
		inc = 1
	}
	return netip.Addr{}, false
}
