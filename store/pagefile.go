package store

// The store reads bbolt's file format (version 2, as go.etcd.io/bbolt
// v1.x writes it; internal/common there) itself, with pread and a bounds
// check on every offset, in the two places where bbolt's own reading
// cannot be trusted with a damaged file:
//
//   - Before bbolt touches a file at open. bbolt reads pages through a
//     memory map and believes the ids, counts and offsets it finds in
//     them: a damaged page makes it panic ("invalid freelist page"), read
//     outside the map (a fault, fatal in tx.Check's own goroutine, where
//     no recover or SetPanicOnFault of ours reaches), allocate from a
//     garbage count, or recurse forever on a cycle of pages. A file whose
//     pages pass the checks here is safe to hand to bbolt and its
//     tx.Check, which then checks what the structure means.
//   - To salvage a damaged file. A bbolt cursor cannot step past a page
//     it cannot read, so one bad leaf would hide every later record of
//     its bucket; reading pages directly skips that page alone.
//
// Layout: a page is a header {id u64, flags u16, count u16, overflow
// u32} then count elements of 16 bytes: branch {pos u32, ksize u32, child
// u64}, leaf {flags u32, pos u32, ksize u32, vsize u32}, pos counted from
// the element's own start, a leaf's value right after its key. A page
// with overflow n spans n+1 pages. A bucket's value is {root u64,
// sequence u64}, followed, when root is 0, by the bucket's inline leaf
// page. Pages 0 and 1 each hold a meta {magic u32, version u32, pageSize
// u32, flags u32, root bucket {root, sequence}, freelist u64, pgid u64
// (the high water mark: pages below it are the database's), txid u64,
// checksum u64 (FNV-64a of the fields before it)} after a page header;
// bbolt uses the valid one with the higher txid. Integers are in the
// machine's byte order.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
)

const (
	pageHeaderSize   = 16
	elementSize      = 16
	bucketHeaderSize = 16

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	noFreelist  = ^uint64(0)

	// bbolt looks for the second meta page at most this far (16 MiB).
	minPageSize = 1024
	maxPageSize = 1024 << 14
)

var ne = binary.NativeEndian

// meta is what a meta page says.
type meta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	freelist uint64 // the freelist's page, or noFreelist
	hwm      uint64 // pages [0, hwm) are the database's
	txid     uint64
}

// parseMeta reads the meta of a page that starts at b[0], and validates
// it as bbolt does (magic, version, checksum).
func parseMeta(b []byte) (meta, error) {
	if len(b) < pageHeaderSize+64 {
		return meta{}, errors.New("too short for a meta page")
	}
	m := b[pageHeaderSize:]
	if ne.Uint32(m) != boltMagic {
		return meta{}, errors.New("not a bbolt meta page")
	}
	if v := ne.Uint32(m[4:]); v != boltVersion {
		return meta{}, fmt.Errorf("bbolt format version %d, not %d", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(m[:56])
	if h.Sum64() != ne.Uint64(m[56:]) {
		return meta{}, errors.New("bad checksum")
	}
	return meta{pageSize: ne.Uint32(m[8:]), root: ne.Uint64(m[16:]), freelist: ne.Uint64(m[32:]),
		hwm: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:])}, nil
}

// pageFile reads the pages of a bbolt file.
type pageFile struct {
	r        io.ReaderAt
	size     int64
	pageSize int64
	meta     meta
	// damagedMeta is the meta page (0 or 1) that failed validation while
	// the other passed; -1 when both are sound.
	damagedMeta int
}

// readPageFile reads the meta pages of the file as bbolt would, to
// decide the page size and which meta is current. An error means bbolt
// could not open the file at all.
func readPageFile(r io.ReaderAt, size int64) (*pageFile, error) {
	buf := make([]byte, 4096)
	readAt := func(off int64) []byte {
		n, _ := r.ReadAt(buf, off)
		return buf[:n]
	}
	m0, err0 := parseMeta(readAt(0))
	// The page size: the first meta's, else that of a second meta found
	// at 1 KiB, 2 KiB, … (bbolt's getPageSize).
	var ps int64
	if err0 == nil {
		ps = int64(m0.pageSize)
	} else {
		for pos := int64(minPageSize); pos <= maxPageSize && pos < size-minPageSize; pos <<= 1 {
			if m, err := parseMeta(readAt(pos)); err == nil {
				ps = int64(m.pageSize)
				break
			}
		}
	}
	if ps == 0 {
		return nil, fmt.Errorf("neither meta page is valid (page 0: %v; page 1 not found)", err0)
	}
	if ps < minPageSize || ps > maxPageSize {
		return nil, fmt.Errorf("the meta page gives a page size of %d", ps)
	}
	if size < 2*ps {
		return nil, fmt.Errorf("the file is %d bytes, less than its two meta pages", size)
	}
	m1, err1 := parseMeta(readAt(ps))
	pf := &pageFile{r: r, size: size, pageSize: ps, damagedMeta: -1}
	switch {
	case err0 != nil && err1 != nil:
		return nil, fmt.Errorf("neither meta page is valid (page 0: %v; page 1: %v)", err0, err1)
	case err0 != nil:
		pf.meta, pf.damagedMeta = m1, 0
	case err1 != nil:
		pf.meta, pf.damagedMeta = m0, 1
	case m1.txid > m0.txid:
		pf.meta = m1
	default:
		pf.meta = m0
	}
	m := pf.meta
	if int64(m.pageSize) != ps {
		return nil, fmt.Errorf("the meta pages disagree on the page size (%d, %d)", ps, m.pageSize)
	}
	if m.hwm < 3 || m.root < 2 || m.root >= m.hwm || (m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.hwm)) {
		return nil, fmt.Errorf("the meta page is inconsistent (root %d, freelist %d, high water mark %d)", m.root, m.freelist, m.hwm)
	}
	return pf, nil
}

// truncated reports whether the file is shorter than the pages its meta
// counts (bbolt only ever grows the file ahead of them).
func (pf *pageFile) truncated() error {
	if pages := uint64(pf.size / pf.pageSize); pf.meta.hwm > pages {
		return fmt.Errorf("the file is truncated: it holds %d pages, its meta page counts %d", pages, pf.meta.hwm)
	}
	return nil
}

// page is one page as read, overflow included, or a bucket's inline page.
type page struct {
	id       uint64
	flags    uint16
	count    int
	overflow uint32
	buf      []byte
}

// header parses a page header without any check.
func header(b []byte) page {
	return page{id: ne.Uint64(b), flags: ne.Uint16(b[8:]), count: int(ne.Uint16(b[10:])), overflow: ne.Uint32(b[12:])}
}

func flagName(f uint16) string {
	switch f {
	case branchPageFlag:
		return "branch"
	case leafPageFlag:
		return "leaf"
	case freelistPageFlag:
		return "freelist"
	case 0x04:
		return "meta"
	}
	return fmt.Sprintf("unknown (flags %#x)", f)
}

// page reads page id, which must be of one of the kinds in want (flags),
// lie with its overflow below the high water mark and in the file, and
// say it is page id.
func (pf *pageFile) page(id uint64, want ...uint16) (*page, error) {
	hwm := pf.meta.hwm
	if id < 2 || id >= hwm {
		return nil, fmt.Errorf("page %d is out of range [2, %d)", id, hwm)
	}
	// One read for the page, a second for its overflow pages if any.
	first := make([]byte, pf.pageSize)
	if _, err := pf.r.ReadAt(first, int64(id)*pf.pageSize); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	p := header(first)
	if p.id != id {
		return nil, fmt.Errorf("page %d says it is page %d", id, p.id)
	}
	ok := false
	for _, f := range want {
		ok = ok || p.flags == f
	}
	if !ok {
		return nil, fmt.Errorf("page %d is a %s page", id, flagName(p.flags))
	}
	end := id + uint64(p.overflow) + 1
	if end > hwm || end < id || int64(end) > pf.size/pf.pageSize {
		return nil, fmt.Errorf("page %d with %d overflow pages runs past the database's end", id, p.overflow)
	}
	p.buf = first
	if p.overflow > 0 {
		p.buf = make([]byte, (int64(p.overflow)+1)*pf.pageSize)
		copy(p.buf, first)
		if _, err := pf.r.ReadAt(p.buf[pf.pageSize:], int64(id+1)*pf.pageSize); err != nil {
			return nil, fmt.Errorf("page %d: %w", id, err)
		}
	}
	return &p, nil
}

// treePage reads a branch or leaf page whose elements fit in it.
func (pf *pageFile) treePage(id uint64) (*page, error) {
	p, err := pf.page(id, branchPageFlag, leafPageFlag)
	if err != nil {
		return nil, err
	}
	return p, p.checkCount()
}

// inlinePage is the leaf page a bucket value carries after its header.
func inlinePage(v []byte) (*page, error) {
	if len(v) < bucketHeaderSize+pageHeaderSize {
		return nil, fmt.Errorf("an inline bucket of %d bytes is too short", len(v))
	}
	p := header(v[bucketHeaderSize:])
	p.buf = v[bucketHeaderSize:]
	if p.flags != leafPageFlag || p.id != 0 {
		return nil, fmt.Errorf("an inline bucket's page is a %s page with id %d", flagName(p.flags), p.id)
	}
	return &p, p.checkCount()
}

// checkOrder checks the keys of a leaf page rise (bbolt's tx.Check does
// it for every page but the inline ones, and bbolt loses its way in a
// bucket whose keys do not).
func (p *page) checkOrder() error {
	var prev []byte
	for i := 0; i < p.count; i++ {
		_, k, _, err := p.leaf(i)
		if err != nil {
			return err
		}
		if i > 0 && string(k) <= string(prev) {
			return fmt.Errorf("an inline bucket's keys are out of order at element %d", i)
		}
		prev = k
	}
	return nil
}

// checkCount checks the element array fits in the page.
func (p *page) checkCount() error {
	if pageHeaderSize+p.count*elementSize > len(p.buf) {
		return fmt.Errorf("page %d: %d elements do not fit in it", p.id, p.count)
	}
	return nil
}

// span returns the bytes n long at pos from the element at base, if the
// page holds them.
func (p *page) span(base int, pos, n uint64) ([]byte, bool) {
	start := uint64(base) + pos
	end := start + n
	if end > uint64(len(p.buf)) || end < start {
		return nil, false
	}
	return p.buf[start:end], true
}

// branch returns the key and child page of element i.
func (p *page) branch(i int) (key []byte, child uint64, err error) {
	base := pageHeaderSize + i*elementSize
	e := p.buf[base:]
	key, ok := p.span(base, uint64(ne.Uint32(e)), uint64(ne.Uint32(e[4:])))
	if !ok || len(key) == 0 {
		return nil, 0, fmt.Errorf("page %d: branch element %d has no key within the page", p.id, i)
	}
	return key, ne.Uint64(e[8:]), nil
}

// leaf returns the flags, key and value of element i.
func (p *page) leaf(i int) (flags uint32, key, value []byte, err error) {
	base := pageHeaderSize + i*elementSize
	e := p.buf[base:]
	ksize := uint64(ne.Uint32(e[8:]))
	kv, ok := p.span(base, uint64(ne.Uint32(e[4:])), ksize+uint64(ne.Uint32(e[12:])))
	if !ok || ksize == 0 {
		// bbolt never writes an empty key, and asserts it never reads one.
		return 0, nil, nil, fmt.Errorf("page %d: leaf element %d has no key within the page", p.id, i)
	}
	return ne.Uint32(e), kv[:ksize], kv[ksize:], nil
}

// freelist reads the free page ids, and the freelist's page span (nil,
// 0 when the file keeps no freelist).
func (pf *pageFile) freelist() (ids []uint64, pages uint64, err error) {
	if pf.meta.freelist == noFreelist {
		return nil, 0, nil
	}
	p, err := pf.page(pf.meta.freelist, freelistPageFlag)
	if err != nil {
		return nil, 0, fmt.Errorf("freelist: %w", err)
	}
	// Its count is of ids, not elements; past 0xFFFF it is the first id.
	b := p.buf[pageHeaderSize:]
	count := uint64(p.count)
	if p.count == 0xFFFF {
		if len(b) < 8 {
			return nil, 0, fmt.Errorf("freelist page %d is too short", p.id)
		}
		count, b = ne.Uint64(b), b[8:]
	}
	if count > uint64(len(b)/8) {
		return nil, 0, fmt.Errorf("freelist page %d counts %d ids, more than it holds", p.id, count)
	}
	ids = make([]uint64, count)
	for i := range ids {
		ids[i] = ne.Uint64(b[i*8:])
		if ids[i] < 2 || ids[i] >= pf.meta.hwm {
			return nil, 0, fmt.Errorf("freelist page %d lists page %d, out of range [2, %d)", p.id, ids[i], pf.meta.hwm)
		}
	}
	return ids, uint64(p.overflow) + 1, nil
}
