package e2b

import (
	"context"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// envd's filesystem.Filesystem over sandboxd's file calls.

type entryInfo struct {
	Name          string     `json:"name"`
	Type          string     `json:"type"`
	Path          string     `json:"path"`
	Size          int64      `json:"size,string"`
	Mode          uint32     `json:"mode"`
	Permissions   string     `json:"permissions"`
	Owner         string     `json:"owner"`
	Group         string     `json:"group"`
	ModifiedTime  *time.Time `json:"modifiedTime,omitempty"`
	SymlinkTarget *string    `json:"symlinkTarget,omitempty"`
	// Metadata is the file's user metadata (envd 0.6.2's).
	Metadata map[string]string `json:"metadata,omitempty"`
}

type pathRequest struct {
	Path string `json:"path"`
}

type entryResponse struct {
	Entry *entryInfo `json:"entry,omitempty"`
}

type listDirRequest struct {
	Path  string `json:"path"`
	Depth uint32 `json:"depth"`
}

type listDirResponse struct {
	Entries []entryInfo `json:"entries"`
}

type moveRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

type empty struct{}

type watchDirRequest struct {
	Path               string `json:"path"`
	Recursive          bool   `json:"recursive"`
	IncludeEntry       bool   `json:"includeEntry"`
	AllowNetworkMounts bool   `json:"allowNetworkMounts"`
}

type filesystemEvent struct {
	Name  string     `json:"name"`
	Type  string     `json:"type"`
	Entry *entryInfo `json:"entry,omitempty"`
}

// watchDirResponse is one of its members (a oneof).
type watchDirResponse struct {
	Start      *empty           `json:"start,omitempty"`
	Filesystem *filesystemEvent `json:"filesystem,omitempty"`
	Keepalive  *empty           `json:"keepalive,omitempty"`
}

// fileTypes are EntryInfo's types by sandboxd's.
var fileTypes = map[string]string{"file": "FILE_TYPE_FILE", "dir": "FILE_TYPE_DIRECTORY", "symlink": "FILE_TYPE_SYMLINK"}

// eventTypes are EventType's names by sandboxd's.
var eventTypes = map[string]string{
	api.FileCreate: "EVENT_TYPE_CREATE", api.FileWrite: "EVENT_TYPE_WRITE", api.FileRemove: "EVENT_TYPE_REMOVE",
	api.FileRename: "EVENT_TYPE_RENAME", api.FileChmod: "EVENT_TYPE_CHMOD",
}

func (g *Gateway) filesystemRPCs() []rpc {
	const svc = "/filesystem.Filesystem/"
	return []rpc{
		unary(svc+"Stat", g.fsStat),
		unary(svc+"MakeDir", g.fsMakeDir),
		unary(svc+"Move", g.fsMove),
		unary(svc+"ListDir", g.fsListDir),
		unary(svc+"Remove", g.fsRemove),
		serverStream(svc+"WatchDir", g.fsWatchDir),
	}
}

// entryOf is a stat as E2B's EntryInfo.
func entryOf(st *api.FileStat) *entryInfo {
	mode, _ := strconv.ParseUint(st.Mode, 8, 32)
	e := &entryInfo{
		Name: st.Name, Type: fileTypes[st.Type], Path: fromSandbox(st.Path), Size: st.Size, Mode: uint32(mode),
		Permissions: st.Permissions, Owner: st.Owner, Group: st.Group, Metadata: st.Metadata,
	}
	if e.Type == "" {
		e.Type = "FILE_TYPE_UNSPECIFIED"
	}
	if !st.ModifiedAt.IsZero() {
		t := st.ModifiedAt.UTC()
		e.ModifiedTime = &t
	}
	if st.SymlinkTarget != "" {
		t := st.SymlinkTarget
		e.SymlinkTarget = &t
	}
	return e
}

func (g *Gateway) fsStat(ctx context.Context, req *pathRequest) (*entryResponse, error) {
	p, err := toSandbox(req.Path)
	if err != nil {
		return nil, err
	}
	st, err := g.o.Daemon.StatFile(ctx, sessionOf(ctx).ID, p)
	if err != nil {
		return nil, err
	}
	return &entryResponse{Entry: entryOf(st)}, nil
}

// fsMakeDir makes a folder and its parents; one already there is
// already_exists, which the SDKs answer as false.
func (g *Gateway) fsMakeDir(ctx context.Context, req *pathRequest) (*entryResponse, error) {
	p, err := toSandbox(req.Path)
	if err != nil {
		return nil, err
	}
	made, err := g.o.Daemon.MakeFolder(ctx, sessionOf(ctx).ID, p)
	if err != nil {
		return nil, err
	}
	if !made.Created {
		return nil, connect.NewError(connect.CodeAlreadyExists, errdefs.ErrAlreadyExists.WithMessage("directory "+api.Quote(req.Path)+" already exists"))
	}
	return &entryResponse{Entry: entryOf(&made.FileStat)}, nil
}

func (g *Gateway) fsMove(ctx context.Context, req *moveRequest) (*entryResponse, error) {
	from, err := toSandbox(req.Source)
	if err != nil {
		return nil, err
	}
	to, err := toSandbox(req.Destination)
	if err != nil {
		return nil, err
	}
	st, err := g.o.Daemon.MoveFile(ctx, sessionOf(ctx).ID, from, to)
	if err != nil {
		return nil, err
	}
	return &entryResponse{Entry: entryOf(st)}, nil
}

func (g *Gateway) fsRemove(ctx context.Context, req *pathRequest) (*empty, error) {
	p, err := toSandbox(req.Path)
	if err != nil {
		return nil, err
	}
	return &empty{}, g.o.Daemon.DeleteFile(ctx, sessionOf(ctx).ID, p)
}

// fsListDir lists a folder to a depth (1 when absent, as envd). A
// listing's entries carry no owner: sandboxd's listing has none (a stat
// of each entry would cost a call each).
func (g *Gateway) fsListDir(ctx context.Context, req *listDirRequest) (*listDirResponse, error) {
	p, err := toSandbox(req.Path)
	if err != nil {
		return nil, err
	}
	depth := max(1, int(req.Depth))
	list, err := g.o.Daemon.ListFolder(ctx, sessionOf(ctx).ID, p, depth)
	if err != nil {
		return nil, err
	}
	out := &listDirResponse{Entries: []entryInfo{}}
	for _, f := range list.Entries {
		full := f.Path
		if full == "" {
			full = path.Join(p, f.Name)
		}
		mode, _ := strconv.ParseUint(f.Mode, 8, 32)
		t := f.ModifiedAt.UTC()
		e := entryInfo{
			Name: f.Name, Type: fileTypes[f.Type], Path: fromSandbox(full), Size: f.Size, Mode: uint32(mode),
			Permissions: f.Permissions, ModifiedTime: &t, Metadata: f.Metadata,
		}
		if e.Type == "" {
			e.Type = "FILE_TYPE_UNSPECIFIED"
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

// keepaliveEvery is how often a quiet watch says it lives.
const keepaliveEvery = 30 * time.Second

// fsWatchDir streams a folder's changes: start once the watch is set,
// then each change by its name below the folder, and keepalives while
// nothing changes. It ends when the client goes or the sandbox ends.
func (g *Gateway) fsWatchDir(ctx context.Context, req *watchDirRequest, st *connect.ServerStream[watchDirResponse]) error {
	p, err := toSandbox(req.Path)
	if err != nil {
		return err
	}
	s := sessionOf(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex // Send is not safe for concurrent use
	send := func(m *watchDirResponse) error {
		mu.Lock()
		defer mu.Unlock()
		return st.Send(m)
	}
	go keepalive(ctx, cancel, func() error { return send(&watchDirResponse{Keepalive: &empty{}}) })
	opened := func() { _ = send(&watchDirResponse{Start: &empty{}}) }
	err = g.o.Daemon.WatchFiles(ctx, s.ID, p, req.Recursive, opened, func(ev api.FileEvent) error {
		typ, ok := eventTypes[ev.Type]
		if !ok {
			return nil // an overflow: E2B's watch has no word for it
		}
		name := strings.TrimPrefix(strings.TrimPrefix(ev.Path, p), "/")
		fe := &filesystemEvent{Name: name, Type: typ}
		if req.IncludeEntry && ev.Type != api.FileRemove && ev.Type != api.FileRename {
			if st, err := g.o.Daemon.StatFile(ctx, s.ID, path.Join(p, name)); err == nil {
				fe.Entry = entryOf(st)
			}
		}
		return send(&watchDirResponse{Filesystem: fe})
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
