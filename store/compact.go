package store

import (
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bbolt never gives pages back to the file system: a database whose
// history was once large stays that large. Open compacts it (rewrites
// its live pages into a new file) when both hold:
//
//   - The file is over DefaultCompactMinSize (32 MiB). bbolt grows a file
//     ahead of its pages — doubling it up to 16 MiB, then 16 MiB at a time
//     — so below 32 MiB the slack is bbolt's own, and a rewrite would win
//     little at the cost of a copy at every start.
//   - The file is over twice its live pages. Past 16 MiB, bbolt's slack
//     is at most one 16 MiB step, under half the file; more than half
//     free is space that deleted sessions and trimmed history left. After
//     a compaction the file is its live pages, so the next start does
//     not compact again.
//
// A compaction reads the live data once and writes it once (about the
// cost of the check at open), at a start, before the daemon serves.
const (
	DefaultCompactMinSize = 32 << 20
	compactRatio          = 2
	// compactTxSize bounds each write transaction of the copy (bbolt
	// holds a transaction's pages in memory until it commits).
	compactTxSize = 16 << 20
)

// needsCompaction decides from the file's size and its live bytes;
// minSize < 0: never.
func needsCompaction(size, live, minSize int64) bool {
	return minSize >= 0 && size > minSize && size > compactRatio*live
}

// compact copies the live data of db (open, checked) into a new file and
// renames it over path; it returns the new file's size. db still serves
// the old file: the caller closes it and opens the new one. On error the
// old file is untouched.
func compact(db *bolt.DB, path string, timeout time.Duration) (int64, error) {
	tmp := compactTemp(path)
	_ = os.Remove(tmp)
	// No fsync per transaction: the file is synced once, whole, before
	// the rename makes it the database.
	dst, _, err := openBolt(tmp, &bolt.Options{NoSync: true, Timeout: timeout})
	if err != nil {
		return 0, err
	}
	err = bolt.Compact(dst, db, compactTxSize)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Stat(tmp)
	}
	if err == nil {
		err = renameDurably(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("compact the database %s: %w", path, err)
	}
	return fi.Size(), nil
}
