package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/store"
)

// databasePath is the daemon's database in its data dir.
func databasePath(cfg config.Config) string { return filepath.Join(cfg.DataDir, "sandboxd.db") }

// openStore opens the daemon's database. A damaged one stops the start
// with one sentence that says what to do: serving it could lose more, and
// a daemon that panicked at every start told the operator nothing.
func openStore(cfg config.Config) (*store.Store, error) {
	path := databasePath(cfg)
	st, err := store.Open(path, store.Options{HistoryLimit: cfg.HistoryLimit, HistoryTotalLimit: cfg.HistoryTotalLimit})
	var ce *store.CorruptError
	if errors.As(err, &ce) {
		return nil, corruptDatabase(cfg, ce)
	}
	return st, err
}

// corruptDatabase is the daemon's answer to a damaged database: one line,
// the command to run, and the copy to restore when there is one.
func corruptDatabase(cfg config.Config, ce *store.CorruptError) error {
	msg := fmt.Sprintf("the database %s is corrupted (%s); run `sandboxd --recover --data-dir %s` to salvage what it holds", ce.Path, ce.Reason, cfg.DataDir)
	if lg := store.LastGoodPath(ce.Path); exists(lg) {
		msg += fmt.Sprintf(", or restore %s", lg)
	}
	return &startError{msg: msg, err: ce}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startError is an error whose message is written for the operator,
// wrapping the one it explains (errors.Is(err, store.ErrCorrupt) holds).
type startError struct {
	msg string
	err error
}

func (e *startError) Error() string { return e.msg }
func (e *startError) Unwrap() error { return e.err }

// logStoreReport logs what opening the database did besides opening it.
func logStoreReport(log *slog.Logger, r store.OpenReport) {
	if r.DamagedMeta >= 0 {
		log.Warn("a meta page of the database was damaged: bbolt used the other one and the database rewrote it", "meta_page", r.DamagedMeta)
	}
	if r.Compacted {
		log.Info("database compacted", "bytes_before", r.SizeBefore, "bytes_after", r.SizeAfter)
	}
	if r.CompactErr != nil {
		log.Warn("database compaction failed: it serves as it was", "error", r.CompactErr)
	}
	if r.LogReplayed > 0 {
		log.Info("new sessions' records replayed from the session log", "records", r.LogReplayed)
	}
	if r.LastGoodErr != nil {
		log.Warn("no last-good copy of the database this start", "error", r.LastGoodErr)
	}
}

// RecoverDatabase salvages the daemon's damaged database (store.Recover),
// for sandboxd --recover; the daemon must not be running.
func RecoverDatabase(cfg config.Config) (*store.Salvage, error) {
	return store.Recover(databasePath(cfg), store.Options{})
}
