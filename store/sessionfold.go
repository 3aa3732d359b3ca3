package store

import (
	"errors"

	bolt "go.etcd.io/bbolt"
)

// The Store's side of the session log (sessionlog.go): its opening and
// replay, the transactions that fold it first, and the goroutine that
// folds it as it fills.

// foldFirst runs read-write transactions on the store's database, each
// putting the session log's due records in first: no write overtakes a
// record the log holds (a delete of it, the next update).
type foldFirst struct{ s *Store }

func (f foldFirst) Update(fn func(*bolt.Tx) error) error {
	var done func()
	err := f.s.db.Update(func(tx *bolt.Tx) error {
		var err error
		if done, err = f.s.log.foldInto(tx); err != nil {
			return err
		}
		return fn(tx)
	})
	if err == nil && done != nil {
		done()
	}
	return err
}

// update runs fn in a read-write transaction after the log's records.
func (s *Store) update(fn func(*bolt.Tx) error) error { return foldFirst{s}.Update(fn) }

// flush folds what the log holds now.
func (s *Store) flush() error {
	if _, upto := s.log.due(); upto == 0 {
		return nil
	}
	return s.update(func(*bolt.Tx) error { return nil })
}

// openLog opens the database's session log and replays what a daemon
// that died left in it. A database without its meta bucket is new (or
// was replaced by a new one): a log beside it is another database's, and
// is dropped.
func (s *Store) openLog(path string) error {
	var folded uint64
	fresh := false
	if err := s.db.View(func(tx *bolt.Tx) error {
		fresh = tx.Bucket(bucketMeta) == nil
		folded = foldedMark(tx)
		return nil
	}); err != nil {
		return err
	}
	l, err := openLog(logPath(path), folded, fresh)
	if err != nil {
		return err
	}
	s.log = l // Open closes it if what follows fails
	replayed := len(l.pending)
	if err := s.flush(); err != nil {
		return errors.Join(errors.New("replay the session log"), err)
	}
	s.report.LogReplayed = replayed
	return nil
}

// startFolder starts the goroutine that folds the log as it fills; Close
// ends it.
func (s *Store) startFolder() {
	s.folding = make(chan struct{})
	s.folder.Add(1)
	go s.fold()
}

// fold folds the log each time an append wakes it, until Close. A fold
// that fails leaves the records in the log (durable there), for the next
// write or the next start.
func (s *Store) fold() {
	defer s.folder.Done()
	for {
		select {
		case <-s.folding:
			return
		case <-s.log.kick:
			_ = s.flush()
		}
	}
}
