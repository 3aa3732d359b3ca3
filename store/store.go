// Package store keeps the daemon's durable state in one bbolt database.
//
// Schema (version 3):
//
//	meta/
//	    version            -> "3"
//	sessions/
//	    <session id>       -> JSON Record (its template: a TemplateKey)
//	templates/                                  (since version 2)
//	    <TemplateKey>      -> JSON Template (as added; not the built-in one)
//	                          root's by name, another owner's by "uid/name"
//	                          (since version 3; by name alone before)
//	executions/
//	    <session id>/      (bucket, one per session)
//	        <seq, 8 bytes big-endian> -> JSON Execution
//
// Executions are kept newest-last under a per-session sequence, and cut to
// the newest HistoryLimit on every append; past HistoryTotalLimit over all
// sessions, the oldest execution of the whole database goes first. Values are JSON so a newer
// daemon can read an older one's records; migrations (ordered, in
// migrations.go) run at open when the stored version is older.
//
// Beside the database, in its folder:
//
//	<db>.sessions.log     new sessions' records, durable with one sync, not
//	                      yet folded into the database (sessionlog.go)
//	<db>.last-good        the database as the last start that found it sound had it
//	<db>.corrupt-<time>   a damaged database Recover replaced
//
// The file is never trusted: Open checks every page before anything
// writes to it (check.go; a damaged file is ErrCorrupt, never a panic),
// compacts a grown one (compact.go) and keeps the last-good copy
// (lastgood.go); Recover salvages a damaged one (recover.go).
package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	bolt "go.etcd.io/bbolt"
)

var (
	bucketMeta       = []byte("meta")
	bucketSessions   = []byte("sessions")
	bucketExecutions = []byte("executions")
	// keyHealth, in meta, is written by Writable.
	keyHealth       = []byte("health")
	bucketTemplates = []byte("templates")
	bucketVolumes   = []byte("volumes")
	bucketSnapshots = []byte("snapshots")
	keyVersion      = []byte("version")
)

// Store is the open database.
type Store struct {
	db           *bolt.DB
	historyLimit int
	totalLimit   int
	// total counts the executions stored. One daemon owns the database, so
	// a count made at open and kept in memory stays true. totalMu guards it
	// across the writes that move it.
	totalMu sync.Mutex
	total   int
	report  OpenReport
	// writes groups concurrent puts into one commit.
	writes groupCommit
	// log holds new sessions' records until they are folded into db
	// (sessionlog.go); folding ends folder's goroutine.
	log     *sessionLog
	folding chan struct{}
	folder  sync.WaitGroup
	closed  atomic.Bool
}

// Options configure Open.
type Options struct {
	// HistoryLimit bounds the executions kept per session (default 100).
	HistoryLimit int
	// HistoryTotalLimit bounds them over all sessions (default 100000).
	HistoryTotalLimit int
	// Timeout bounds the wait for the file lock another daemon holds.
	Timeout time.Duration
	// CompactMinSize is the file size under which Open never compacts
	// (0: DefaultCompactMinSize; below 0: Open never compacts). See
	// compact.go.
	CompactMinSize int64
}

// Open opens (creating if needed) the database at path. A second daemon on
// the same file fails after Timeout instead of hanging.
//
// Before anything writes to it, the file is checked whole (check.go): a
// damaged one is an error matching ErrCorrupt, never a panic, and is left
// as it was for Recover. A file grown well past its live data is
// compacted (compact.go). Once open, migrated and counted, the database
// is copied to LastGoodPath(path).
func Open(path string, o Options) (*Store, error) {
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = 100
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.HistoryTotalLimit <= 0 {
		o.HistoryTotalLimit = 100000
	}
	if o.CompactMinSize == 0 {
		o.CompactMinSize = DefaultCompactMinSize
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	db, rep, err := openChecked(path, o)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, historyLimit: o.HistoryLimit, totalLimit: o.HistoryTotalLimit, report: rep}
	// The check found the pages and the schema sound; a panic of bbolt's
	// on anything it still missed is damage too, not a crash. The log's
	// records are replayed before the schema migrates: they are of the
	// version the database has.
	if err := protect(func() error {
		if err := s.openLog(path); err != nil {
			return err
		}
		return s.init()
	}); err != nil {
		if s.log != nil {
			s.log.close()
		}
		db.Close()
		var pe panicError
		if errors.As(err, &pe) {
			return nil, corrupt(path, err)
		}
		return nil, err
	}
	s.startFolder()
	s.report.LastGood, s.report.LastGoodErr = LastGoodPath(path), s.saveLastGood(path)
	if s.report.LastGoodErr != nil {
		s.report.LastGood = ""
	}
	return s, nil
}

// init migrates the schema, checks its buckets are there and counts the
// executions.
func (s *Store) init() error {
	if err := s.migrate(); err != nil {
		return err
	}
	return s.db.View(func(tx *bolt.Tx) error {
		for _, b := range schemaBuckets {
			if tx.Bucket(b.name) == nil {
				return &CorruptError{Path: s.db.Path(), Reason: fmt.Sprintf("its %s bucket is missing", b.name)}
			}
		}
		return tx.Bucket(bucketExecutions).ForEachBucket(func(k []byte) error {
			s.total += tx.Bucket(bucketExecutions).Bucket(k).Stats().KeyN
			return nil
		})
	})
}

// Report says what Open did to the file besides opening it.
func (s *Store) Report() OpenReport { return s.report }

// Close folds what the session log holds into the database and closes
// both. A second Close does nothing.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.folding)
	s.folder.Wait()
	err := s.flush()
	return errors.Join(err, s.log.close(), s.db.Close())
}

// PutSession writes a session record.
func (s *Store) PutSession(r *Record) error { return s.put(bucketSessions, r.ID, r) }

// AddSession writes a new session's record, durable when it returns nil,
// with one disk sync: it goes to the session log, which the database
// takes in later (sessionlog.go). A record the log cannot take goes to
// the database directly.
func (s *Store) AddSession(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := s.log.append([]byte(r.ID), b); !errors.Is(err, errLogFull) {
		return err
	}
	return s.writes.update(foldFirst{s}, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).Put([]byte(r.ID), b)
	})
}

// put writes v as JSON under key in a top-level bucket.
func (s *Store) put(bucket []byte, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.writes.update(foldFirst{s}, func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Put([]byte(key), b)
	})
}

// GetSession reads one session record.
func (s *Store) GetSession(id string) (*Record, error) {
	if err := s.flush(); err != nil {
		return nil, err
	}
	var r Record
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSessions).Get([]byte(id))
		if v == nil {
			return errdefs.ErrNotFound.WithMessage("no such session: " + id)
		}
		return json.Unmarshal(v, &r)
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Sessions lists every session record.
func (s *Store) Sessions() ([]*Record, error) {
	if err := s.flush(); err != nil {
		return nil, err
	}
	return list[Record](s, bucketSessions)
}

// list reads every JSON value of a top-level bucket, in key order.
func list[T any](s *Store, bucket []byte) ([]*T, error) {
	var out []*T
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(_, v []byte) error {
			var t T
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			out = append(out, &t)
			return nil
		})
	})
	return out, err
}

// DeleteSession removes a session and its history in one transaction.
func (s *Store) DeleteSession(id string) error {
	s.totalMu.Lock()
	defer s.totalMu.Unlock()
	n := 0
	err := s.update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSessions).Delete([]byte(id)); err != nil {
			return err
		}
		h := tx.Bucket(bucketExecutions).Bucket([]byte(id))
		if h == nil {
			return nil
		}
		n = h.Stats().KeyN
		return tx.Bucket(bucketExecutions).DeleteBucket([]byte(id))
	})
	if err == nil {
		s.total -= n
	}
	return err
}

// Executed is one finished execution to record, with the session
// counters it moved.
type Executed struct {
	SessionID  string
	ExecCount  int64
	LastUsedAt time.Time
	Execution  *Execution
}

// AddExecutions appends executions to their sessions' histories, keeping
// only the newest HistoryLimit, and updates the sessions' counters, all in
// one transaction (one fsync for the lot). An execution of a session that
// is no longer stored is dropped: a deleted session never comes back.
func (s *Store) AddExecutions(items []Executed) error {
	s.totalMu.Lock()
	defer s.totalMu.Unlock()
	total := s.total
	err := s.update(func(tx *bolt.Tx) error {
		s.total = total // a retried or failed transaction counts afresh
		sessions := tx.Bucket(bucketSessions)
		for _, it := range items {
			v := sessions.Get([]byte(it.SessionID))
			if v == nil {
				continue
			}
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if it.ExecCount > r.ExecCount {
				r.ExecCount = it.ExecCount
			}
			if it.LastUsedAt.After(r.LastUsedAt) {
				r.LastUsedAt = it.LastUsedAt
			}
			rb, err := json.Marshal(&r)
			if err != nil {
				return err
			}
			if err := sessions.Put([]byte(it.SessionID), rb); err != nil {
				return err
			}
			if err := s.appendHistory(tx, it.SessionID, it.Execution); err != nil {
				return err
			}
		}
		for s.total > s.totalLimit {
			if err := s.dropOldest(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.total = total
	}
	return err
}

// dropOldest deletes the oldest execution of the database: the oldest of
// the first (oldest) executions of each session.
func (s *Store) dropOldest(tx *bolt.Tx) error {
	var oldest []byte
	var when time.Time
	all := tx.Bucket(bucketExecutions)
	err := all.ForEachBucket(func(k []byte) error {
		_, v := all.Bucket(k).Cursor().First()
		if v == nil {
			return nil
		}
		var e struct {
			StartedAt time.Time `json:"started_at"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		if oldest == nil || e.StartedAt.Before(when) {
			oldest, when = append([]byte(nil), k...), e.StartedAt
		}
		return nil
	})
	if err != nil || oldest == nil {
		s.total = 0 // nothing left to drop: the count was off
		return err
	}
	c := all.Bucket(oldest).Cursor()
	c.First()
	if err := c.Delete(); err != nil {
		return err
	}
	s.total--
	return nil
}

func (s *Store) appendHistory(tx *bolt.Tx, id string, e *Execution) error {
	eb, err := json.Marshal(e)
	if err != nil {
		return err
	}
	h, err := tx.Bucket(bucketExecutions).CreateBucketIfNotExists([]byte(id))
	if err != nil {
		return err
	}
	if err := h.Put(historyKey(h, e), eb); err != nil {
		return err
	}
	s.total++
	// Trim from the oldest end.
	c := h.Cursor()
	n := 0
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	for ; n > s.historyLimit; n-- {
		if k, _ := c.First(); k == nil {
			break
		}
		if err := c.Delete(); err != nil {
			return err
		}
		s.total--
	}
	return nil
}

// Executions lists a session's history, newest first, at most limit.
func (s *Store) Executions(id string, limit int) ([]Execution, error) {
	out := []Execution{}
	err := s.db.View(func(tx *bolt.Tx) error {
		h := tx.Bucket(bucketExecutions).Bucket([]byte(id))
		if h == nil {
			return nil
		}
		c := h.Cursor()
		for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
			var e Execution
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// Writable checks that the database takes a write, as the daemon's every
// change needs: it commits (and syncs) one small key.
func (s *Store) Writable() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyHealth, []byte(time.Now().UTC().Format(time.RFC3339)))
	})
}

// Execution is execution eid of session id's history; errdefs.ErrNotFound when the
// history does not keep it. The history is short (history_limit), and
// only each record's id is decoded until the one is found.
func (s *Store) Execution(id, eid string) (*Execution, error) {
	var out *Execution
	err := s.db.View(func(tx *bolt.Tx) error {
		h := tx.Bucket(bucketExecutions).Bucket([]byte(id))
		if h == nil {
			return nil
		}
		c := h.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var head struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(v, &head); err != nil {
				return err
			}
			if head.ID != eid {
				continue
			}
			out = new(Execution)
			return json.Unmarshal(v, out)
		}
		return nil
	})
	if err == nil && out == nil {
		err = errdefs.ErrNotFound.WithMessage("no such execution: " + eid)
	}
	return out, err
}

// historyKey is e's key in its session's history h: when it started, in
// Unix nanoseconds, so a history is in the order its executions started
// whatever order they ended in (one that waited its turn behind another
// can end, and be recorded, before it). Databases from before keyed
// executions 1, 2, 3, …: older than any start, as they are.
func historyKey(h *bolt.Bucket, e *Execution) []byte {
	n := uint64(1)
	if e.StartedAt.Unix() > 0 {
		n = uint64(e.StartedAt.UnixNano())
	} else if k, _ := h.Cursor().Last(); len(k) == 8 {
		n = binary.BigEndian.Uint64(k) + 1 // no start: the newest
	}
	for h.Get(seqKey(n)) != nil { // two started in the same nanosecond
		n++
	}
	return seqKey(n)
}

func seqKey(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// version reads the stored schema version (0 for a new database).
func version(tx *bolt.Tx) (int, error) {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return 0, nil
	}
	v := m.Get(keyVersion)
	if v == nil {
		return 0, nil
	}
	return strconv.Atoi(string(v))
}
