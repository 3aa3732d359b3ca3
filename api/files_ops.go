package api

import (
	"net/http"
	"strings"
	"time"
)

// FileStat is the answer of GET …/files/stat: one file, folder or symlink,
// never followed. Owner and Group are the names the sandbox gives them
// (its /etc/passwd and /etc/group), or the number where it has none.
// Permissions is ls's string ("-rw-r--r--"), so a gateway speaking
// another API (E2B's EntryInfo) maps it unchanged.
type FileStat struct {
	Name          string    `json:"name"`
	Path          string    `json:"path"`
	Type          string    `json:"type"` // file, dir, symlink, other
	Size          int64     `json:"size"`
	Mode          string    `json:"mode"` // octal, "0644"
	Permissions   string    `json:"permissions"`
	Owner         string    `json:"owner"`
	Group         string    `json:"group"`
	ModifiedAt    time.Time `json:"mtime"`
	SymlinkTarget string    `json:"symlink_target,omitempty"`
	// Metadata is the file's or folder's user metadata (its user.
	// extended attributes, the prefix left out).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FileMoveRequest is the body of POST …/files/move.
type FileMoveRequest struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// MkdirRequest is the body of POST …/files/mkdir.
type MkdirRequest struct {
	Path string `json:"path"`
}

// FolderMade is the answer of POST …/files/mkdir: the folder, and whether
// this call made it (201) or found it there (200).
type FolderMade struct {
	FileStat
	Created bool `json:"created"`
}

// File event types of GET …/files/watch.
const (
	FileCreate = "create"
	FileWrite  = "write"
	FileRemove = "remove"
	FileRename = "rename" // the old name: the new one comes as a create
	FileChmod  = "chmod"
	// FileOverflow says the kernel dropped events: what changed since
	// must be read again.
	FileOverflow = "overflow"
)

// FileEvent is one line of GET …/files/watch.
type FileEvent struct {
	Type string `json:"type"`
	Path string `json:"path,omitempty"`
}

// MetaHeaderPrefix starts the headers of PUT …/files that give the file
// written its user metadata, one a key ("X-Sandboxd-Meta-Author: ada"
// is author=ada): kept as the file's user. extended attributes, answered
// by stat and listings as metadata.
const MetaHeaderPrefix = "X-Sandboxd-Meta-"

// MetaFromHeader is the metadata of h's headers that start with prefix
// (MetaHeaderPrefix; a gateway gives its own API's), nil if none. Header
// names know no case: keys are lower-cased, and a key given twice keeps
// its first value.
func MetaFromHeader(h http.Header, prefix string) map[string]string {
	var out map[string]string
	for k, v := range h {
		if len(k) <= len(prefix) || !strings.EqualFold(k[:len(prefix)], prefix) || len(v) == 0 {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[strings.ToLower(k[len(prefix):])] = v[0]
	}
	return out
}
