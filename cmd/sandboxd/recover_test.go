package main

import (
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/store"
)

func TestSalvageReport(t *testing.T) {
	at := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    store.Salvage
		want string
	}{
		{"sound", store.Salvage{Path: "/d/sandboxd.db"}, "the database /d/sandboxd.db is sound: nothing to recover\n"},
		{"leaf page", store.Salvage{Path: "/d/sandboxd.db", Damage: "page 53 says it is page 9", Sessions: 296, Templates: 1, Executions: 2104,
			SearchedOrphans: true, Problems: 1, FirstProblem: "page 53 says it is page 9", KeptAs: "/d/sandboxd.db.corrupt-1"},
			`the database /d/sandboxd.db was corrupted: page 53 says it is page 9
salvaged 296 sessions, 1 template and 2104 executions
skipped 1 unreadable page or record (first: page 53 says it is page 9)
the damaged file is kept as /d/sandboxd.db.corrupt-1; sandboxd can start
`},
		{"branch page, drops", store.Salvage{Path: "/d/sandboxd.db", Damage: "page 7 is a free page", Sessions: 1, Executions: 1, Reattached: 40,
			SearchedOrphans: true, Problems: 2, FirstProblem: "page 7 is a free page", Undecodable: 1, Orphaned: 3, KeptAs: "/d/sandboxd.db.corrupt-1"},
			`the database /d/sandboxd.db was corrupted: page 7 is a free page
salvaged 1 session, 0 templates and 1 execution (40 found on pages the damage had cut off)
skipped 2 unreadable pages or records (first: page 7 is a free page)
dropped 1 record that was not valid and 3 executions of sessions whose record was lost
the damaged file is kept as /d/sandboxd.db.corrupt-1; sandboxd can start
`},
		{"from the last-good copy", store.Salvage{Path: "/d/sandboxd.db", Damage: "the file is empty", FromLastGood: true, Unreadable: "too short",
			Source: "/d/sandboxd.db.last-good", SourceTime: at, Sessions: 2, VersionLost: true, SchemaVersion: 2, KeptAs: "/d/sandboxd.db.corrupt-1"},
			`the database /d/sandboxd.db was corrupted: the file is empty
it could not be read at all (too short): recovered from the last-good copy /d/sandboxd.db.last-good, of 2026-11-23T15:00:00Z; what changed after that is lost
salvaged 2 sessions, 0 templates and 0 executions
the schema version was unreadable: taken as 2
the damaged file is kept as /d/sandboxd.db.corrupt-1; sandboxd can start
`},
		{"freelist", store.Salvage{Path: "/d/sandboxd.db", Damage: "freelist", Sessions: 2, Problems: 1, FirstProblem: "freelist", KeptAs: "/k"},
			`the database /d/sandboxd.db was corrupted: freelist
salvaged 2 sessions, 0 templates and 0 executions
skipped 1 unreadable page or record (first: freelist)
the freelist was unreadable: pages the damage cut off were not searched
the damaged file is kept as /k; sandboxd can start
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := salvageReport(&tt.s); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
