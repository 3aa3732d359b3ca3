package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// The session log makes a new session's record durable with one disk
// sync: a bbolt commit takes two (its pages, then its meta page), and on
// a busy host each also waits for the filesystem's journal, which the
// pool's refills keep full (a pooled create's record took ~3 ms of its
// ~5 here, a bare fdatasync ~0.7). AddSession appends the record to a
// file of its own, preallocated and written through once so that an
// append overwrites blocks the filesystem already holds (fdatasync then
// flushes data, not the journal), and answers once it is synced;
// concurrent appends share a sync. A goroutine then folds what the log
// holds into the database, and every write to the database folds first,
// in its own transaction, so that nothing overtakes a record the log
// holds (a delete, the next update). Open replays what a crash left.
//
// Layout: entries one after another from offset 0, each a 24-byte header
// {magic u32, crc u32 (Castagnoli, of the rest of the header, the key and
// the value), seq u64, key length u32, value length u32} then the key and
// the value. Seq grows by one an entry, never restarting: the database's
// meta bucket keeps the last one folded (keyLogFolded), and replay takes
// the chain of valid entries from offset 0 whose seqs follow one another,
// applying those past it. Once everything is folded the log starts again
// at offset 0 (its first header zeroed): what an older round left after
// the new chain's end fails the chain (a bad header, or a seq that does
// not follow), so it is never replayed.

const (
	logMagic      = 0x5342444c // "SBDL"
	logHeaderSize = 24
	// logSize is the log's preallocated size: ~500 records of ~2 KiB. A
	// record that finds it full goes to the database directly.
	logSize = 1 << 20
)

// keyLogFolded, in meta, is the seq of the last log entry folded.
var keyLogFolded = []byte("session-log-folded")

var logCRC = crc32.MakeTable(crc32.Castagnoli)

// fdatasync is unix.Fdatasync; a test makes it fail.
var fdatasync = unix.Fdatasync

// errLogFull: the entry does not fit in what is left of the log.
var errLogFull = errors.New("session log full")

// logEntry is one record the log holds.
type logEntry struct {
	seq        uint64
	key, value []byte
}

// sessionLog is the open log file.
type sessionLog struct {
	f *os.File

	mu sync.Mutex
	// off is where the next entry goes; seq the last entry's (or the
	// last folded, when the log is empty).
	off int64
	seq uint64
	// pending are the entries written and not yet folded, oldest first;
	// mark is the database's folded mark as last known.
	pending []logEntry
	mark    uint64
	// broken is set when a sync failed: the log takes no more entries
	// (the kernel may have dropped the pages it failed to write).
	broken bool

	// syncMu makes one sync at a time; synced is the last seq it made
	// durable (under mu too, for fold).
	syncMu sync.Mutex
	synced uint64

	// kick wakes the folder.
	kick chan struct{}
}

// logPath is the session log of the database at path.
func logPath(path string) string { return path + ".sessions.log" }

// openLog opens (creating and preallocating) the log at path and takes
// in the chain a previous daemon left: the entries past folded are
// pending, to replay. fresh: the database is new, and the chain not its.
func openLog(path string, folded uint64, fresh bool) (*sessionLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	l := &sessionLog{f: f, kick: make(chan struct{}, 1)}
	if err := l.preallocate(); err != nil {
		f.Close()
		return nil, fmt.Errorf("session log %s: %w", path, err)
	}
	chain, err := readChain(io.NewSectionReader(f, 0, logSize))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("session log %s: %w", path, err)
	}
	if fresh {
		chain = nil
	}
	l.seq, l.mark = folded, folded
	for _, e := range chain {
		if e.seq > folded {
			l.pending = append(l.pending, e)
		}
		l.seq = max(l.seq, e.seq)
	}
	l.synced = l.seq
	return l, nil
}

// preallocate writes the file's logSize bytes through once (zeros where
// it is shorter) and syncs it: an append then overwrites blocks the
// filesystem has, which fdatasync flushes without a journal commit.
func (l *sessionLog) preallocate() error {
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() >= logSize {
		return nil
	}
	if _, err := l.f.WriteAt(make([]byte, logSize-fi.Size()), fi.Size()); err != nil {
		return err
	}
	return l.f.Sync()
}

// readChain reads the entries from offset 0 while each is valid and its
// seq follows the one before it.
func readChain(r io.ReaderAt) ([]logEntry, error) {
	var out []logEntry
	var h [logHeaderSize]byte
	for off := int64(0); off+logHeaderSize <= logSize; {
		if _, err := r.ReadAt(h[:], off); err != nil {
			return nil, err
		}
		if binary.LittleEndian.Uint32(h[0:]) != logMagic {
			break
		}
		seq := binary.LittleEndian.Uint64(h[8:])
		kn, vn := int64(binary.LittleEndian.Uint32(h[16:])), int64(binary.LittleEndian.Uint32(h[20:]))
		end := off + logHeaderSize + kn + vn
		if kn > logSize || vn > logSize || end > logSize || (len(out) > 0 && seq != out[len(out)-1].seq+1) {
			break
		}
		body := make([]byte, kn+vn)
		if _, err := r.ReadAt(body, off+logHeaderSize); err != nil {
			return nil, err
		}
		if crc32.Update(crc32.Checksum(h[8:], logCRC), logCRC, body) != binary.LittleEndian.Uint32(h[4:]) {
			break
		}
		out = append(out, logEntry{seq: seq, key: body[:kn], value: body[kn:]})
		off = end
	}
	return out, nil
}

// encode is e as the log holds it.
func (e *logEntry) encode() []byte {
	b := make([]byte, logHeaderSize+len(e.key)+len(e.value))
	binary.LittleEndian.PutUint32(b[0:], logMagic)
	binary.LittleEndian.PutUint64(b[8:], e.seq)
	binary.LittleEndian.PutUint32(b[16:], uint32(len(e.key)))
	binary.LittleEndian.PutUint32(b[20:], uint32(len(e.value)))
	copy(b[logHeaderSize:], e.key)
	copy(b[logHeaderSize+len(e.key):], e.value)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], logCRC))
	return b
}

// append writes key and value as the next entry and returns once it is
// durable; errLogFull when it does not fit (nothing written).
func (l *sessionLog) append(key, value []byte) error {
	l.mu.Lock()
	if l.broken {
		l.mu.Unlock()
		return errLogFull
	}
	e := logEntry{seq: l.seq + 1, key: key, value: value}
	b := e.encode()
	if l.off+int64(len(b)) > logSize {
		l.mu.Unlock()
		return errLogFull
	}
	if _, err := l.f.WriteAt(b, l.off); err != nil {
		l.mu.Unlock()
		return err
	}
	l.off += int64(len(b))
	l.seq = e.seq
	l.pending = append(l.pending, e)
	l.mu.Unlock()

	if err := l.sync(e.seq); err != nil {
		return err
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return nil
}

// sync makes every entry up to seq durable: one fdatasync covers all the
// entries written before it, so appends that wait here together share
// one.
func (l *sessionLog) sync(seq uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if l.synced >= seq {
		l.mu.Unlock()
		return nil
	}
	if l.broken {
		l.mu.Unlock()
		return errors.New("session log: an earlier sync failed")
	}
	upto := l.seq
	l.mu.Unlock()
	err := fdatasync(int(l.f.Fd()))
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		// What was not synced is not the database's: its creates fail
		// (those waiting for a later sync too: broken).
		l.broken = true
		l.pending = l.pending[:l.syncedLocked():l.syncedLocked()]
		return fmt.Errorf("session log: %w", err)
	}
	l.synced = upto
	return nil
}

// due returns the entries to fold (those pending and synced) and the
// seq the folded mark must reach: the last of them, or, once a sync
// failed, the last written (what was written and not synced is
// abandoned: its creates failed).
func (l *sessionLog) due() (entries []logEntry, upto uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.syncedLocked()
	if n > 0 {
		upto = l.pending[n-1].seq
	}
	if l.broken {
		upto = l.seq
	}
	if upto <= l.mark {
		upto = 0 // all there
	}
	return l.pending[:n:n], upto
}

// syncedLocked counts the pending entries synced (a prefix: seqs grow).
func (l *sessionLog) syncedLocked() int {
	n := 0
	for n < len(l.pending) && l.pending[n].seq <= l.synced {
		n++
	}
	return n
}

// folded drops the entries up to seq, which the database now holds, and
// starts the log again from offset 0 when it holds nothing else.
func (l *sessionLog) folded(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for n < len(l.pending) && l.pending[n].seq <= seq {
		n++
	}
	l.pending = l.pending[n:]
	l.mark = max(l.mark, seq)
	if len(l.pending) > 0 || l.seq != seq || l.broken {
		return
	}
	// Not synced: the folded mark already says none of it is to replay.
	if _, err := l.f.WriteAt(make([]byte, logHeaderSize), 0); err == nil {
		l.off = 0
	}
}

// close closes the file.
func (l *sessionLog) close() error { return l.f.Close() }

// foldInto puts the log's due entries into tx's sessions bucket and marks
// them folded there, skipping what an earlier transaction folded (the
// mark, read in tx, says: transactions are serial, their callers' calls
// of done are not). done tells the log once tx is committed.
func (l *sessionLog) foldInto(tx *bolt.Tx) (done func(), err error) {
	if l == nil {
		return nil, nil
	}
	due, last := l.due()
	if last == 0 {
		return nil, nil
	}
	mark := foldedMark(tx)
	if last <= mark {
		return func() { l.folded(last) }, nil
	}
	b := tx.Bucket(bucketSessions)
	if b == nil {
		return nil, errors.New("session log: the database has no sessions bucket")
	}
	for _, e := range due {
		// The log holds new sessions only: a record the database has is
		// newer than the log's (a salvage that lost the mark replays
		// what was folded).
		if e.seq <= mark || b.Get(e.key) != nil {
			continue
		}
		if err := b.Put(e.key, e.value); err != nil {
			return nil, err
		}
	}
	if err := setFoldedMark(tx, last); err != nil {
		return nil, err
	}
	return func() { l.folded(last) }, nil
}

// foldedMark is the seq of the last log entry tx's database holds.
func foldedMark(tx *bolt.Tx) uint64 {
	if m := tx.Bucket(bucketMeta); m != nil {
		if v := m.Get(keyLogFolded); len(v) == 8 {
			return binary.BigEndian.Uint64(v)
		}
	}
	return 0
}

func setFoldedMark(tx *bolt.Tx, seq uint64) error {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return errors.New("session log: the database has no meta bucket")
	}
	return m.Put(keyLogFolded, binary.BigEndian.AppendUint64(nil, seq))
}
