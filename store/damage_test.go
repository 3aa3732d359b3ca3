package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The damaged databases of these tests are made from one fixture: enough
// records that its buckets span branch pages, leaf pages and inline
// buckets, and a last-good copy that holds them all.

const (
	fixtureSessions = 300
	// fixtureBig sessions have a history of 40 (a branch page over
	// leaves); session fixtureSmall has 3 executions (one leaf page of
	// its own) and fixtureTiny 1 (an inline bucket).
	fixtureBig   = 5
	fixtureSmall = 5
	fixtureTiny  = 6
)

func sessionID(i int) string { return fmt.Sprintf("%016x", 0xabc000+i) }

var fixture struct {
	once         sync.Once
	db, lastGood []byte
	err          error
}

// fixtureFiles returns the fixture database and its last-good copy.
func fixtureFiles(t *testing.T) (db, lastGood []byte) {
	t.Helper()
	fixture.once.Do(func() { fixture.db, fixture.lastGood, fixture.err = buildFixture() })
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	return fixture.db, fixture.lastGood
}

func buildFixture() (_, _ []byte, err error) {
	dir, err := os.MkdirTemp("", "store-fixture-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sandboxd.db")
	s, err := Open(path, Options{})
	if err != nil {
		return nil, nil, err
	}
	at := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	err = s.db.Update(func(tx *bolt.Tx) error {
		for i := range fixtureSessions {
			r := &Record{ID: sessionID(i), OwnerUID: uint32(1000 + i%3), Template: "python", Status: "stopped", CreatedAt: at,
				Labels: map[string]string{"note": strings.Repeat("n", 300)}}
			b, _ := json.Marshal(r)
			if err := tx.Bucket(bucketSessions).Put([]byte(r.ID), b); err != nil {
				return err
			}
		}
		return nil
	})
	for i := 0; err == nil && i < 3; i++ {
		err = s.PutTemplate(&Template{Name: fmt.Sprintf("t%d", i), Rootfs: "host", Preload: "import json", CreatedAt: at})
	}
	var batch []Executed
	add := func(session, n int) {
		for j := range n {
			batch = append(batch, Executed{SessionID: sessionID(session), ExecCount: int64(j + 1), Execution: &Execution{
				ID: fmt.Sprintf("e%d-%d", session, j), SessionID: sessionID(session), Language: "python", Status: "ok",
				Stdout: strings.Repeat("o", 500), StartedAt: at.Add(time.Duration(j) * time.Second)}})
		}
	}
	for i := range fixtureBig {
		add(i, 40)
	}
	add(fixtureSmall, 3)
	add(fixtureTiny, 1)
	if err == nil {
		err = s.AddExecutions(batch)
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	// Opened again: the last-good copy now holds everything.
	if s, err = Open(path, Options{}); err != nil {
		return nil, nil, err
	}
	if err := s.Close(); err != nil {
		return nil, nil, err
	}
	db, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	lg, err := os.ReadFile(LastGoodPath(path))
	return db, lg, err
}

// placeFixture writes the fixture into a new data dir and returns the
// database's path.
func placeFixture(t *testing.T, lastGood bool) string {
	t.Helper()
	db, lg := fixtureFiles(t)
	path := filepath.Join(t.TempDir(), "sandboxd.db")
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	if lastGood {
		if err := os.WriteFile(LastGoodPath(path), lg, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// placedRecord is a record and where it lives: the pages from the root
// to the one holding it (an inline bucket's records live on the page
// holding the bucket).
type placedRecord struct {
	value []byte
	pages []uint64
}

// placeRecords maps each record of a sound file ("session/<id>",
// "template/<name>", "execution/<session>/<seq>") to its pages. It walks
// the pages with its own loop, not the walker under test.
func placeRecords(t *testing.T, path string) (map[string]placedRecord, *pageFile) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := readPageFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]placedRecord{}
	type visit func(pages []uint64, flags uint32, k, v []byte)
	var tree func(id uint64, pages []uint64, fn visit)
	leaves := func(p *page, pages []uint64, fn visit) {
		for i := range p.count {
			flags, k, v, err := p.leaf(i)
			if err != nil {
				t.Fatal(err)
			}
			fn(pages, flags, k, v)
		}
	}
	bucket := func(v []byte, pages []uint64, fn visit) {
		if root := ne.Uint64(v); root != 0 {
			tree(root, pages, fn)
			return
		}
		p, err := inlinePage(v)
		if err != nil {
			t.Fatal(err)
		}
		leaves(p, pages, fn)
	}
	tree = func(id uint64, pages []uint64, fn visit) {
		p, err := pf.treePage(id)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(append([]uint64(nil), pages...), id)
		if p.flags == leafPageFlag {
			leaves(p, pages, fn)
			return
		}
		for i := range p.count {
			_, child, err := p.branch(i)
			if err != nil {
				t.Fatal(err)
			}
			tree(child, pages, fn)
		}
	}
	put := func(key string, pages []uint64, v []byte) {
		out[key] = placedRecord{bytes.Clone(v), append([]uint64(nil), pages...)}
	}
	tree(pf.meta.root, nil, func(pages []uint64, _ uint32, name, v []byte) {
		switch string(name) {
		case "sessions", "templates":
			bucket(v, pages, func(pages []uint64, _ uint32, k, v []byte) { put(string(name[:len(name)-1])+"/"+string(k), pages, v) })
		case "executions":
			bucket(v, pages, func(pages []uint64, _ uint32, id, v []byte) {
				bucket(v, pages, func(pages []uint64, _ uint32, k, v []byte) {
					put(fmt.Sprintf("execution/%s/%d", id, binary.BigEndian.Uint64(k)), pages, v)
				})
			})
		}
	})
	return out, pf
}

// readRecords reads every record of a database with bbolt, keyed as
// placeRecords keys them.
func readRecords(t *testing.T, path string) map[string][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string][]byte{}
	err = db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"session", "template"} {
			if err := tx.Bucket([]byte(name + "s")).ForEach(func(k, v []byte) error {
				out[name+"/"+string(k)] = bytes.Clone(v)
				return nil
			}); err != nil {
				return err
			}
		}
		all := tx.Bucket(bucketExecutions)
		return all.ForEachBucket(func(id []byte) error {
			return all.Bucket(id).ForEach(func(k, v []byte) error {
				out[fmt.Sprintf("execution/%s/%d", id, binary.BigEndian.Uint64(k))] = bytes.Clone(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// overwrite puts random bytes over whole pages.
func overwrite(t *testing.T, path string, pageSize int64, seed int64, ids ...uint64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewSource(seed))
	buf := make([]byte, pageSize)
	for _, id := range ids {
		rng.Read(buf)
		if _, err := f.WriteAt(buf, int64(id)*pageSize); err != nil {
			t.Fatal(err)
		}
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// bucketRoot is the root page of a bucket (a path of names), by bbolt.
func bucketRoot(t *testing.T, path string, names ...string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var root uint64
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(names[0]))
		for _, n := range names[1:] {
			b = b.Bucket([]byte(n))
		}
		root = uint64(b.RootPage())
		return nil
	})
	return root
}

// damage is one way a database is hurt.
type damage struct {
	name string
	// hurt damages the file at path (pf, recs: the sound file's layout)
	// and returns the pages it destroyed; size: the file was cut there.
	hurt func(t *testing.T, path string, pf *pageFile, recs map[string]placedRecord) (pages []uint64, size int64)
	// opens: bbolt copes (one meta page lost): Open serves every record.
	opens bool
	// fromLastGood: the file cannot be read at all; Recover takes the
	// last-good copy.
	fromLastGood bool
}

func pageKind(t *testing.T, pf *pageFile, id uint64) uint16 {
	t.Helper()
	p, err := pf.treePage(id)
	if err != nil {
		t.Fatal(err)
	}
	return p.flags
}

var damages = []damage{
	{name: "both meta pages", fromLastGood: true, hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		overwrite(t, path, pf.pageSize, 1, 0, 1)
		return []uint64{0, 1}, 0
	}},
	{name: "meta page 0", opens: true, hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		overwrite(t, path, pf.pageSize, 2, 0)
		return []uint64{0}, 0
	}},
	{name: "meta page 1", opens: true, hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		overwrite(t, path, pf.pageSize, 3, 1)
		return []uint64{1}, 0
	}},
	{name: "freelist page", hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		overwrite(t, path, pf.pageSize, 4, pf.meta.freelist)
		return []uint64{pf.meta.freelist}, 0
	}},
	{name: "root page", hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		overwrite(t, path, pf.pageSize, 5, pf.meta.root)
		return []uint64{pf.meta.root}, 0
	}},
	{name: "branch page of sessions", hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		id := bucketRoot(t, path, "sessions")
		if pageKind(t, pf, id) != branchPageFlag {
			t.Fatalf("the sessions' root page %d is no branch page", id)
		}
		overwrite(t, path, pf.pageSize, 6, id)
		return []uint64{id}, 0
	}},
	{name: "branch page of a history", hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		id := bucketRoot(t, path, "executions", sessionID(0))
		if pageKind(t, pf, id) != branchPageFlag {
			t.Fatalf("the history's root page %d is no branch page", id)
		}
		overwrite(t, path, pf.pageSize, 7, id)
		return []uint64{id}, 0
	}},
	{name: "leaf page of sessions", hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		p, err := pf.treePage(bucketRoot(t, path, "sessions"))
		if err != nil {
			t.Fatal(err)
		}
		_, id, _ := p.branch(p.count / 2)
		if pageKind(t, pf, id) != leafPageFlag {
			t.Fatalf("page %d is no leaf page", id)
		}
		overwrite(t, path, pf.pageSize, 8, id)
		return []uint64{id}, 0
	}},
	{name: "leaf page of a history", hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		id := bucketRoot(t, path, "executions", sessionID(fixtureSmall))
		if pageKind(t, pf, id) != leafPageFlag {
			t.Fatalf("the small history's root page %d is no leaf page", id)
		}
		overwrite(t, path, pf.pageSize, 9, id)
		return []uint64{id}, 0
	}},
	{name: "cut in half", hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		half := pf.meta.hwm / 2
		truncate(t, path, int64(half)*pf.pageSize+pf.pageSize/2)
		var gone []uint64
		for id := half; id < pf.meta.hwm; id++ {
			gone = append(gone, id)
		}
		return gone, int64(half) * pf.pageSize
	}},
	{name: "cut to less than two pages", fromLastGood: true, hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		truncate(t, path, pf.pageSize+100)
		return nil, pf.pageSize + 100
	}},
	{name: "cut to nothing", fromLastGood: true, hurt: func(t *testing.T, path string, pf *pageFile, _ map[string]placedRecord) ([]uint64, int64) {
		truncate(t, path, 0)
		return nil, 0
	}},
	{name: "random bytes over several pages", hurt: func(t *testing.T, path string, pf *pageFile, recs map[string]placedRecord) ([]uint64, int64) {
		// Pages the tree uses (a free page's damage harms nothing).
		used := map[uint64]bool{}
		for _, r := range recs {
			for _, id := range r.pages {
				used[id] = true
			}
		}
		var ids []uint64
		for id := range used {
			ids = append(ids, id)
		}
		rng := rand.New(rand.NewSource(10))
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		ids = ids[:5]
		overwrite(t, path, pf.pageSize, 11, ids...)
		return ids, 0
	}},
}

// TestDamagedDatabase hurts a database in each way bbolt can be hurt.
// Open must answer ErrCorrupt (never panic) and leave the file and its
// last-good copy alone — except with one meta page lost, which bbolt
// survives with every record. Recover must then salvage every record on
// a page left whole whose way from the root is whole, or, when the
// freelist is whole (cut-off pages can then be told from free ones),
// every record on a page left whole; and invent none.
func TestDamagedDatabase(t *testing.T) {
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			path := placeFixture(t, true)
			recs, pf := placeRecords(t, path)
			destroyed, _ := d.hurt(t, path, pf, recs)
			hurt, _ := os.ReadFile(path)
			lastGood, _ := os.ReadFile(LastGoodPath(path))

			s, err := Open(path, Options{Timeout: time.Second})
			if d.opens {
				if err != nil {
					t.Fatalf("open with one meta page lost: %v", err)
				}
				if got := s.Report().DamagedMeta; got != int(destroyed[0]) {
					t.Errorf("damaged meta page %d reported, want %d", got, destroyed[0])
				}
				s.Close()
				if got := readRecords(t, path); !sameRecords(recs, got) {
					t.Fatalf("%d records after open, want %d", len(got), len(recs))
				}
				// Open's first commit rewrote the damaged meta page.
				if _, pf := placeRecords(t, path); pf.damagedMeta != -1 {
					t.Fatalf("meta page %d still damaged after open", pf.damagedMeta)
				}
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("a damaged database opened")
			}
			ce, ok := err.(*CorruptError)
			if !ok || !isCorrupt(err) || ce.Path != path || strings.Contains(ce.Reason, "\n") {
				t.Fatalf("open: %#v, want a *CorruptError of %s", err, path)
			}
			t.Logf("open: %v", err)
			if now, _ := os.ReadFile(path); !bytes.Equal(now, hurt) {
				t.Fatal("open changed the damaged file")
			}
			if now, _ := os.ReadFile(LastGoodPath(path)); !bytes.Equal(now, lastGood) {
				t.Fatal("open changed the last-good copy")
			}

			rep, err := Recover(path, Options{Timeout: time.Second})
			if err != nil {
				t.Fatalf("recover: %v", err)
			}
			t.Logf("recover: %+v", *rep)
			if rep.Damage == "" || rep.FromLastGood != d.fromLastGood {
				t.Fatalf("damage %q, from the last-good copy: %v, want %v", rep.Damage, rep.FromLastGood, d.fromLastGood)
			}
			if kept, err := os.ReadFile(rep.KeptAs); err != nil || !bytes.Equal(kept, hurt) {
				t.Fatalf("the damaged file is not kept as %s: %v", rep.KeptAs, err)
			}
			got := readRecords(t, path)
			if rep.Sessions+rep.Templates+rep.Executions != len(got) {
				t.Errorf("recover counted %d records, the database has %d", rep.Sessions+rep.Templates+rep.Executions, len(got))
			}
			for k, v := range got {
				if r, ok := recs[k]; !ok || !bytes.Equal(r.value, v) {
					t.Errorf("recover invented %s", k)
				}
			}
			want := recs
			if !d.fromLastGood {
				want = salvageable(recs, destroyed, pf.meta.freelist)
			}
			missing := 0
			for k := range want {
				if _, ok := got[k]; !ok {
					if missing++; missing < 5 {
						t.Errorf("%s was on whole pages and is lost", k)
					}
				}
			}
			if missing > 0 {
				t.Fatalf("%d of %d salvageable records lost", missing, len(want))
			}
			t.Logf("%d of %d records salvaged (%d salvageable)", len(got), len(recs), len(want))
			// The salvaged database serves.
			s, err = Open(path, Options{Timeout: time.Second})
			if err != nil {
				t.Fatalf("open after recover: %v", err)
			}
			defer s.Close()
			if all, err := s.Sessions(); err != nil || len(all) != rep.Sessions {
				t.Fatalf("sessions after recover: %d, %v", len(all), err)
			}
			// A history goes on past its last sequence.
			id := sessionID(fixtureBig - 1)
			if _, ok := got["session/"+id]; ok {
				if err := s.AddExecutions([]Executed{{SessionID: id, Execution: &Execution{ID: "after"}}}); err != nil {
					t.Fatal(err)
				}
				if h, _ := s.Executions(id, 1); len(h) != 1 || h[0].ID != "after" {
					t.Fatalf("newest execution after recover: %+v", h)
				}
			}
		})
	}
}

func isCorrupt(err error) bool {
	_, ok := err.(*CorruptError)
	return ok && errors.Is(err, ErrCorrupt)
}

func sameRecords(want map[string]placedRecord, got map[string][]byte) bool {
	if len(want) != len(got) {
		return false
	}
	for k, r := range want {
		if !bytes.Equal(got[k], r.value) {
			return false
		}
	}
	return true
}

// salvageable are the records Recover must bring back when pages
// destroyed are lost: those on a whole page reached through whole pages,
// or, with the freelist whole, on any whole page; an execution only with
// its session.
func salvageable(recs map[string]placedRecord, destroyed []uint64, freelist uint64) map[string]placedRecord {
	lost := map[uint64]bool{}
	for _, id := range destroyed {
		lost[id] = true
	}
	ok := func(r placedRecord) bool {
		if lost[r.pages[len(r.pages)-1]] {
			return false
		}
		if !lost[freelist] {
			return true
		}
		for _, id := range r.pages {
			if lost[id] {
				return false
			}
		}
		return true
	}
	out := map[string]placedRecord{}
	for k, r := range recs {
		if !ok(r) {
			continue
		}
		if rest, found := strings.CutPrefix(k, "execution/"); found {
			session, _, _ := strings.Cut(rest, "/")
			if s, ok2 := recs["session/"+session]; !ok2 || !ok(s) {
				continue
			}
		}
		out[k] = r
	}
	return out
}
