package store

import "fmt"

// maxDepth bounds how deep pages and nested buckets go. bbolt's trees are
// balanced and a few levels deep; a chain deeper than this is damage.
const maxDepth = 64

// elementFunc is called with each element of a bucket's leaves: its
// flags (bucketLeafFlag: the value is a nested bucket), key and value.
// The slices are the walker's: copy what is kept.
type elementFunc func(flags uint32, key, value []byte) error

// walker walks bucket trees of a pageFile, reaching each page once.
type walker struct {
	pf *pageFile
	// seen holds every page reached, overflow pages included.
	seen map[uint64]bool
	// skip, when set, is told of each problem and the walk goes on past
	// what it concerns (salvage); when nil, the first problem ends the
	// walk (the check at open).
	skip func(error)
}

func newWalker(pf *pageFile, skip func(error)) *walker {
	return &walker{pf: pf, seen: map[uint64]bool{}, skip: skip}
}

// problem ends the walk with err, or has it skipped.
func (w *walker) problem(err error) error {
	if w.skip == nil {
		return err
	}
	w.skip(err)
	return nil
}

// tree walks the pages under page id, calling fn on each leaf element.
func (w *walker) tree(id uint64, depth int, fn elementFunc) error {
	if depth > maxDepth {
		return w.problem(fmt.Errorf("page %d is nested more than %d deep", id, maxDepth))
	}
	if w.seen[id] {
		return w.problem(fmt.Errorf("page %d is reached twice", id))
	}
	w.seen[id] = true // even if unreadable: it is not an orphan
	p, err := w.pf.treePage(id)
	if err != nil {
		return w.problem(err)
	}
	for i := uint64(1); i <= uint64(p.overflow); i++ {
		if w.seen[id+i] {
			return w.problem(fmt.Errorf("page %d overflows into page %d, reached elsewhere", id, id+i))
		}
		w.seen[id+i] = true
	}
	if p.flags == leafPageFlag {
		return w.leaves(p, fn)
	}
	if p.count == 0 {
		return w.problem(fmt.Errorf("branch page %d is empty", id))
	}
	for i := 0; i < p.count; i++ {
		_, child, err := p.branch(i)
		if err == nil {
			err = w.tree(child, depth+1, fn)
		} else {
			err = w.problem(err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// leaves calls fn on each element of a leaf page.
func (w *walker) leaves(p *page, fn elementFunc) error {
	for i := 0; i < p.count; i++ {
		flags, k, v, err := p.leaf(i)
		if err == nil {
			err = fn(flags, k, v)
		} else {
			err = w.problem(err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// bucket walks the bucket whose value (header, then the inline page of a
// small bucket) is v, and returns its sequence.
func (w *walker) bucket(v []byte, depth int, fn elementFunc) (seq uint64, err error) {
	if len(v) < bucketHeaderSize {
		return 0, w.problem(fmt.Errorf("a bucket value of %d bytes is too short", len(v)))
	}
	root, seq := ne.Uint64(v), ne.Uint64(v[8:])
	if root != 0 {
		return seq, w.tree(root, depth+1, fn)
	}
	p, err := inlinePage(v)
	if err == nil && w.skip == nil {
		err = p.checkOrder()
	}
	if err != nil {
		return seq, w.problem(err)
	}
	return seq, w.leaves(p, fn)
}

// checkTree reads every page of every bucket, nested ones too, and
// returns the pages reached; the first problem is the error.
func (pf *pageFile) checkTree() (map[uint64]bool, error) {
	w := newWalker(pf, nil)
	var visit func(depth int) elementFunc
	visit = func(depth int) elementFunc {
		return func(flags uint32, _, v []byte) error {
			if flags&bucketLeafFlag == 0 {
				return nil
			}
			_, err := w.bucket(v, depth, visit(depth+1))
			return err
		}
	}
	return w.seen, w.tree(pf.meta.root, 0, visit(1))
}
