package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/daemon"
	"github.com/sandboxd/sandboxd/daemon/config"
	"github.com/sandboxd/sandboxd/store"
)

// recoverDatabase is sandboxd --recover: it salvages the database of the
// configured data dir and says, in a few lines, what it saved, what it
// dropped and where the damaged file went.
func recoverDatabase(w io.Writer, cfg config.Config) error {
	s, err := daemon.RecoverDatabase(cfg)
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("refusing to recover a database in use: %w", err)
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, salvageReport(s))
	return err
}

// salvageReport is what --recover prints.
func salvageReport(s *store.Salvage) string {
	if s.Damage == "" {
		return fmt.Sprintf("the database %s is sound: nothing to recover\n", s.Path)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the database %s was corrupted: %s\n", s.Path, s.Damage)
	if s.FromLastGood {
		fmt.Fprintf(&b, "it could not be read at all (%s): recovered from the last-good copy %s, of %s; what changed after that is lost\n",
			s.Unreadable, s.Source, s.SourceTime.Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "salvaged %s, %s and %s", count(s.Sessions, "session", "sessions"), count(s.Templates, "template", "templates"), count(s.Executions, "execution", "executions"))
	if s.Reattached > 0 {
		fmt.Fprintf(&b, " (%d found on pages the damage had cut off)", s.Reattached)
	}
	b.WriteString("\n")
	if s.Problems > 0 {
		fmt.Fprintf(&b, "skipped %s (first: %s)\n", count(s.Problems, "unreadable page or record", "unreadable pages or records"), s.FirstProblem)
	}
	var dropped []string
	if s.Undecodable > 0 {
		dropped = append(dropped, count(s.Undecodable, "record that was not valid", "records that were not valid"))
	}
	if s.Orphaned > 0 {
		dropped = append(dropped, count(s.Orphaned, "execution of a session whose record was lost", "executions of sessions whose record was lost"))
	}
	if len(dropped) > 0 {
		fmt.Fprintf(&b, "dropped %s\n", strings.Join(dropped, " and "))
	}
	if !s.FromLastGood && !s.SearchedOrphans {
		b.WriteString("the freelist was unreadable: pages the damage cut off were not searched\n")
	}
	if s.VersionLost {
		fmt.Fprintf(&b, "the schema version was unreadable: taken as %d\n", s.SchemaVersion)
	}
	fmt.Fprintf(&b, "the damaged file is kept as %s; sandboxd can start\n", s.KeptAs)
	return b.String()
}

// count is n of one or many.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
