package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// salvager reads what it can of a damaged file (pagefile.go, walking
// past every page or element it cannot read) into a fresh database of
// the same schema.
type salvager struct {
	pf  *pageFile
	w   *walker
	out *batch
	rep *Salvage
	// free holds the free pages; nil when the freelist cannot be read.
	free map[uint64]bool
	// seqs is each session history's bucket sequence, as read.
	seqs map[string]uint64
	// version is the stored schema version; -1: not read.
	version int
	// logFolded is the session log's folded mark, carried over (nil:
	// not read).
	logFolded []byte
}

// salvage fills dst, a new database, from pf.
func salvage(pf *pageFile, dst *bolt.DB, rep *Salvage) error {
	sv := &salvager{pf: pf, rep: rep, seqs: map[string]uint64{}, version: -1,
		out: &batch{db: dst, rep: rep}}
	sv.w = newWalker(pf, sv.problem)
	if err := dst.Update(func(tx *bolt.Tx) error {
		for _, m := range migrations {
			if err := m(tx); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	sv.readFreelist()
	top := map[string][]byte{}
	if err := sv.w.tree(pf.meta.root, 0, func(flags uint32, k, v []byte) error {
		if flags&bucketLeafFlag != 0 {
			top[string(k)] = bytes.Clone(v)
		}
		return nil
	}); err != nil {
		return err
	}
	if v, ok := top[string(bucketMeta)]; ok {
		if _, err := sv.w.bucket(v, 1, sv.readVersion); err != nil {
			return err
		}
	}
	if sv.version > SchemaVersion {
		return fmt.Errorf("the database has schema version %d, newer than this sandboxd knows (%d): recover it with that sandboxd", sv.version, SchemaVersion)
	}
	for _, b := range [][]byte{bucketSessions, bucketTemplates, bucketVolumes, bucketSnapshots} {
		if v, ok := top[string(b)]; ok {
			if _, err := sv.w.bucket(v, 1, sv.record(b, false)); err != nil {
				return err
			}
		}
	}
	if v, ok := top[string(bucketExecutions)]; ok {
		if _, err := sv.w.bucket(v, 1, sv.history); err != nil {
			return err
		}
	}
	if sv.free != nil {
		if err := sv.orphans(); err != nil {
			return err
		}
	}
	if err := sv.out.flush(); err != nil {
		return err
	}
	return sv.finish(dst)
}

// problem counts a page or element that could not be read.
func (sv *salvager) problem(err error) {
	sv.rep.Problems++
	if sv.rep.FirstProblem == "" {
		sv.rep.FirstProblem = err.Error()
	}
}

// readFreelist reads the free pages, which tell pages cut off from the
// tree (orphans) from pages no longer in use.
func (sv *salvager) readFreelist() {
	ids, n, err := sv.pf.freelist()
	if err != nil {
		sv.problem(err)
		return
	}
	if sv.pf.meta.freelist == noFreelist {
		return // kept by no page: free pages cannot be told from orphans
	}
	sv.free = map[uint64]bool{}
	for _, id := range ids {
		sv.free[id] = true
	}
	for i := uint64(0); i < n; i++ {
		sv.w.seen[sv.pf.meta.freelist+i] = true
	}
	sv.rep.SearchedOrphans = true
}

func (sv *salvager) readVersion(flags uint32, k, v []byte) error {
	if flags&bucketLeafFlag == 0 && bytes.Equal(k, keyVersion) {
		if n, err := strconv.Atoi(string(v)); err == nil {
			sv.version = n
		}
	}
	if flags&bucketLeafFlag == 0 && bytes.Equal(k, keyLogFolded) && len(v) == 8 {
		sv.logFolded = bytes.Clone(v)
	}
	return nil
}

// record keeps each element that is the JSON of bucket's record.
func (sv *salvager) record(bucket []byte, orphan bool) elementFunc {
	return func(flags uint32, k, v []byte) error {
		var err error
		switch {
		case flags&bucketLeafFlag != 0:
			err = fmt.Errorf("a bucket")
		case bytes.Equal(bucket, bucketSessions):
			err = json.Unmarshal(v, new(Record))
		case bytes.Equal(bucket, bucketVolumes):
			err = json.Unmarshal(v, new(Volume))
		case bytes.Equal(bucket, bucketSnapshots):
			err = json.Unmarshal(v, new(Snapshot))
		default:
			err = json.Unmarshal(v, new(Template))
		}
		if err != nil {
			sv.rep.Undecodable++
			return nil
		}
		return sv.out.put(bucket, nil, k, v, orphan)
	}
}

// history reads the executions bucket: one bucket per session.
func (sv *salvager) history(flags uint32, k, v []byte) error {
	if flags&bucketLeafFlag == 0 {
		sv.rep.Undecodable++
		return nil
	}
	id := string(k)
	seq, err := sv.w.bucket(v, 2, sv.execution(id, false))
	sv.seqs[id] = max(sv.seqs[id], seq)
	return err
}

// execution keeps each element of session id's history that is an
// execution under its 8-byte sequence.
func (sv *salvager) execution(id string, orphan bool) elementFunc {
	return func(flags uint32, k, v []byte) error {
		if flags&bucketLeafFlag != 0 || len(k) != 8 || id == "" || json.Unmarshal(v, new(Execution)) != nil {
			sv.rep.Undecodable++
			return nil
		}
		return sv.out.put(bucketExecutions, []byte(id), k, v, orphan)
	}
}

// orphans searches the pages neither reached from the root nor free:
// pages a damaged page cut off from their tree (bbolt's freelist holds
// every page no tree uses, so a stale copy of a deleted record is never
// one of them). Their records go back by what they are: an execution
// names its session, a session and a template their key.
func (sv *salvager) orphans() error {
	var roots []uint64
	children := map[uint64]bool{}
	for id := uint64(2); id < sv.pf.meta.hwm; id++ {
		if sv.w.seen[id] || sv.free[id] {
			continue
		}
		p, err := sv.pf.treePage(id)
		if err != nil {
			continue // overflow of another page, or damage
		}
		roots = append(roots, id)
		for i := 0; p.flags == branchPageFlag && i < p.count; i++ {
			if _, c, err := p.branch(i); err == nil {
				children[c] = true
			}
		}
	}
	// Walk from the top of each cut-off tree; then anything left (a
	// cycle of damaged pages) on its own.
	for _, all := range []bool{false, true} {
		for _, id := range roots {
			if !sv.w.seen[id] && (all || !children[id]) {
				if err := sv.w.tree(id, 0, sv.classify); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// classify puts back an element of a cut-off page by what it holds.
func (sv *salvager) classify(flags uint32, k, v []byte) error {
	if flags&bucketLeafFlag != 0 {
		// The only nested buckets are the sessions' histories.
		switch string(k) {
		case string(bucketMeta), string(bucketSessions), string(bucketTemplates), string(bucketExecutions), string(bucketVolumes), string(bucketSnapshots):
			return nil
		}
		id := string(k)
		seq, err := sv.w.bucket(v, 1, sv.execution(id, true))
		sv.seqs[id] = max(sv.seqs[id], seq)
		return err
	}
	var probe struct {
		ID        string `json:"id"`
		SessionID string `json:"session_id"`
		Name      string `json:"name"`
		VolumeID  string `json:"volume_id"`
		Snapshot  string `json:"snapshot_id"`
		OwnerUID  uint32 `json:"owner_uid"`
	}
	if json.Unmarshal(v, &probe) != nil {
		sv.rep.Undecodable++
		return nil
	}
	switch {
	case len(k) == 8 && probe.SessionID != "":
		return sv.execution(probe.SessionID, true)(flags, k, v)
	case probe.Snapshot != "" && probe.Snapshot == string(k):
		return sv.record(bucketSnapshots, true)(flags, k, v)
	case probe.ID != "" && probe.ID == string(k):
		return sv.record(bucketSessions, true)(flags, k, v)
	case probe.VolumeID != "" && VolumeKey(probe.OwnerUID, probe.Name) == string(k):
		return sv.record(bucketVolumes, true)(flags, k, v)
	case probe.Name != "" && probe.Name == string(k):
		return sv.record(bucketTemplates, true)(flags, k, v)
	}
	sv.rep.Undecodable++
	return nil
}

// finish drops the histories of sessions whose record was lost (the
// daemon would never show or delete them), sets each history's sequence
// past its last execution, writes the schema version and counts.
func (sv *salvager) finish(dst *bolt.DB) error {
	return dst.Update(func(tx *bolt.Tx) error {
		sessions, all := tx.Bucket(bucketSessions), tx.Bucket(bucketExecutions)
		var ids [][]byte
		if err := all.ForEachBucket(func(k []byte) error {
			ids = append(ids, bytes.Clone(k))
			return nil
		}); err != nil {
			return err
		}
		for _, id := range ids {
			h := all.Bucket(id)
			n := h.Stats().KeyN
			if sessions.Get(id) == nil {
				sv.rep.Orphaned += n
				if err := all.DeleteBucket(id); err != nil {
					return err
				}
				continue
			}
			seq := max(sv.seqs[string(id)], h.Sequence())
			if last, _ := h.Cursor().Last(); len(last) == 8 {
				seq = max(seq, binary.BigEndian.Uint64(last))
			}
			if err := h.SetSequence(seq); err != nil {
				return err
			}
			sv.rep.Executions += n
		}
		v := sv.version
		if v < 1 {
			v, sv.rep.VersionLost = SchemaVersion, true
		}
		sv.rep.SchemaVersion = v
		sv.rep.Sessions = sessions.Stats().KeyN
		sv.rep.Templates = tx.Bucket(bucketTemplates).Stats().KeyN
		sv.rep.Volumes = tx.Bucket(bucketVolumes).Stats().KeyN
		sv.rep.Snapshots = tx.Bucket(bucketSnapshots).Stats().KeyN
		if sv.logFolded != nil {
			if err := tx.Bucket(bucketMeta).Put(keyLogFolded, sv.logFolded); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyVersion, []byte(strconv.Itoa(v)))
	})
}

// batchSize bounds the bytes of one write transaction of a salvage.
const batchSize = 4 << 20

// putOp is one record to write.
type putOp struct {
	bucket, sub, k, v []byte
	// orphan: found on a cut-off page; a copy from the tree wins.
	orphan bool
}

// batch writes records in transactions of up to batchSize bytes.
type batch struct {
	db   *bolt.DB
	rep  *Salvage
	ops  []putOp
	size int
}

func (b *batch) put(bucket, sub, k, v []byte, orphan bool) error {
	b.ops = append(b.ops, putOp{bucket, bytes.Clone(sub), bytes.Clone(k), bytes.Clone(v), orphan})
	if b.size += len(k) + len(v); b.size >= batchSize {
		return b.flush()
	}
	return nil
}

func (b *batch) flush() error {
	err := b.db.Update(func(tx *bolt.Tx) error {
		for _, op := range b.ops {
			bk := tx.Bucket(op.bucket)
			if op.sub != nil {
				var err error
				if bk, err = bk.CreateBucketIfNotExists(op.sub); err != nil {
					b.rep.Undecodable++ // a session id bbolt refuses as a name
					continue
				}
			}
			if op.orphan && bk.Get(op.k) != nil {
				continue
			}
			if err := bk.Put(op.k, op.v); err != nil {
				b.rep.Undecodable++ // a key bbolt refuses (empty, too long)
				continue
			}
			if op.orphan {
				b.rep.Reattached++
			}
		}
		return nil
	})
	b.ops, b.size = nil, 0
	return err
}
