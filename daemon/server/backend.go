// Package server serves the sandboxd API over HTTP on a Unix socket. It
// knows HTTP, identities and the wire types; what the operations do is the
// Backend's (package daemon) business.
package server

import (
	"context"
	"io"
	"net"
	"os"

	"github.com/sandboxd/sandboxd/api"
)

// Backend is what the router needs from the daemon: one interface an
// area, as moby's routers each declare their backend, so a handler's file
// names the area it depends on and a fake implements only that.
type Backend interface {
	SystemBackend
	NodeBackend
	SessionBackend
	ExecBackend
	HistoryBackend
	ProcessBackend
	FileBackend
	TemplateBackend
	ContextBackend
	VolumeBackend
	SnapshotBackend
	UndoBackend
}

// Backends are the areas' backends, each served by whichever owner holds
// the area (as moby's router for images takes the daemon's image service,
// not the daemon): the daemon for sessions, its template owner for
// templates, and so on. Handlers call their area's methods through the
// embedded fields.
type Backends struct {
	SystemBackend
	NodeBackend
	SessionBackend
	ExecBackend
	HistoryBackend
	ProcessBackend
	FileBackend
	TemplateBackend
	ContextBackend
	VolumeBackend
	SnapshotBackend
	UndoBackend
}

// BackendsOf serves every area from b (a test's fake that implements all).
func BackendsOf(b Backend) Backends {
	return Backends{b, b, b, b, b, b, b, b, b, b, b, b}
}

// missing names an area no backend serves, or is "".
func (b Backends) missing() string {
	switch {
	case b.SystemBackend == nil:
		return "system"
	case b.NodeBackend == nil:
		return "node"
	case b.SessionBackend == nil:
		return "sessions"
	case b.ExecBackend == nil:
		return "exec"
	case b.HistoryBackend == nil:
		return "history"
	case b.ProcessBackend == nil:
		return "processes"
	case b.FileBackend == nil:
		return "files"
	case b.TemplateBackend == nil:
		return "templates"
	case b.ContextBackend == nil:
		return "contexts"
	case b.VolumeBackend == nil:
		return "volumes"
	case b.SnapshotBackend == nil:
		return "snapshots"
	case b.UndoBackend == nil:
		return "undo"
	}
	return ""
}

// Backends serves every area.
var _ Backend = Backends{}

// SystemBackend answers for the daemon as a whole: its info and the
// event stream.
type SystemBackend interface {
	Info(ctx context.Context) (*api.Info, error)
	// Events streams session events matching f to send until ctx ends,
	// f.Until passes or send fails.
	Events(ctx context.Context, f api.EventFilter, send func(*api.SessionEvent) error) error
}

// NodeBackend answers for the node: its health, what schedulers read and
// draining.
type NodeBackend interface {
	Health(ctx context.Context) (*api.Health, error)
	// Node describes the daemon for schedulers (GET /v1/node).
	Node(ctx context.Context) (*api.Node, error)
	// Drain turns draining on or off (root only) and answers the node.
	Drain(ctx context.Context, on bool) (*api.Node, error)
}

// SessionBackend owns sessions' lifecycle and settings.
type SessionBackend interface {
	// CreateSessionOnce creates a session, or, under an Idempotency-Key
	// (key) a create of the caller's used already, answers the session
	// that one made (created false).
	CreateSessionOnce(ctx context.Context, req *api.CreateSessionRequest, key string) (s *api.Session, created bool, err error)
	ListSessions(ctx context.Context, labels map[string]string) ([]api.Session, error)
	GetSession(ctx context.Context, id string) (*api.Session, error)
	DeleteSession(ctx context.Context, id string) error
	StopSession(ctx context.Context, id string) (*api.Session, error)
	StartSession(ctx context.Context, id string) (*api.Session, error)
	RestartSession(ctx context.Context, id string) (*api.Session, error)
	PauseSession(ctx context.Context, id string) (*api.Session, error)
	ResumeSession(ctx context.Context, id string) (*api.Session, error)
	SetNetwork(ctx context.Context, id string, req *api.NetworkRequest) (*api.Session, error)
	// UpdateSession changes what PATCH /v1/sessions/{id} changes (the
	// deadline).
	UpdateSession(ctx context.Context, id string, req *api.UpdateSessionRequest) (*api.Session, error)
	InstallPackages(ctx context.Context, id string, req *api.PackagesRequest, onEvent func(api.Event)) (*api.Execution, error)
	// PortDialer returns a dialer of a TCP port inside a session's sandbox.
	PortDialer(ctx context.Context, id string, port int) (func(context.Context) (net.Conn, error), error)
	Stats(ctx context.Context, id string) (*api.Stats, error)
}

// ExecBackend runs code in a session, or in a one-off one (Run), and answers its executions.
type ExecBackend interface {
	Exec(ctx context.Context, id string, req *api.ExecRequest, onEvent func(api.Event)) (*api.Execution, error)
	// Attach starts a process for an attached client; serve relays its
	// frames over the upgraded connection (nil: the upgrade failed) and
	// must be called once.
	Attach(ctx context.Context, id string, req *api.AttachRequest) (serve func(conn io.ReadWriteCloser), err error)
	// Interrupt interrupts the session's running execution, and says
	// whether one ran.
	Interrupt(ctx context.Context, id string) (bool, error)
	// StartExec starts an execution and answers its id (wait false).
	StartExec(ctx context.Context, id string, req *api.ExecRequest) (string, error)
	Run(ctx context.Context, req *api.RunRequest, onEvent func(api.Event)) (*api.Execution, error)
}

// ContextBackend owns sessions' code contexts: interpreters of their own
// in one sandbox.
type ContextBackend interface {
	CreateContext(ctx context.Context, id string, req *api.CreateContextRequest) (*api.CodeContext, error)
	// Contexts lists a session's, the default one first.
	Contexts(ctx context.Context, id string) ([]api.CodeContext, error)
	DeleteContext(ctx context.Context, id, cid string) error
	// RestartContext starts its interpreter afresh.
	RestartContext(ctx context.Context, id, cid string) (*api.CodeContext, error)
}

// VolumeBackend serves volumes: filesystems of their own size that
// outlive sessions, named per owner.
type VolumeBackend interface {
	CreateVolume(ctx context.Context, req *api.CreateVolumeRequest) (*api.Volume, error)
	ListVolumes(ctx context.Context) ([]api.Volume, error)
	GetVolume(ctx context.Context, name string) (*api.Volume, error)
	// UpdateVolume changes whom it is shared with.
	UpdateVolume(ctx context.Context, name string, req *api.UpdateVolumeRequest) (*api.Volume, error)
	// DeleteVolume refuses (conflict) while a session mounts it.
	DeleteVolume(ctx context.Context, name string) error
	// OpenVolumeFile, PutVolumeFile and DeleteVolumeFile serve a
	// volume's files without a session, paths from its root.
	OpenVolumeFile(ctx context.Context, name, path string) (*os.File, *api.FileList, error)
	PutVolumeFile(ctx context.Context, name, path string, body io.Reader) (*api.FileWritten, error)
	DeleteVolumeFile(ctx context.Context, name, path string) error
}

// SnapshotBackend serves snapshots (a session's files and settings kept
// beyond it), the sessions made from them, and forks.
type SnapshotBackend interface {
	CreateSnapshot(ctx context.Context, id string, req *api.CreateSnapshotRequest) (*api.Snapshot, error)
	ListSnapshots(ctx context.Context) ([]api.Snapshot, error)
	GetSnapshot(ctx context.Context, ref string) (*api.Snapshot, error)
	DeleteSnapshot(ctx context.Context, ref string) error
	// CreateSessions makes req.Count sessions from req.Snapshot, all or
	// none.
	CreateSessions(ctx context.Context, req *api.CreateSessionRequest) ([]api.Session, error)
	// Fork makes sessions that start where session id is now.
	Fork(ctx context.Context, id string, req *api.ForkRequest) ([]api.Session, error)
	// HibernateSession saves the session's memory to disk and ends its
	// sandbox; its next use wakes it.
	HibernateSession(ctx context.Context, id string) (*api.Session, error)
	// ExportSnapshot answers what writes the snapshot as one tar stream;
	// ImportSnapshot makes one of the caller's from such a stream.
	ExportSnapshot(ctx context.Context, ref string) (func(io.Writer) error, error)
	ImportSnapshot(ctx context.Context, name string, body io.Reader) (*api.Snapshot, error)
}

// UndoBackend takes a session back to before its last executions.
type UndoBackend interface {
	Undo(ctx context.Context, id string, req *api.UndoRequest) (*api.UndoResult, error)
}

// HistoryBackend reads a session's executions, running or recorded.
type HistoryBackend interface {
	// Execution is one execution of a session, running or recorded.
	Execution(ctx context.Context, id, eid string) (*api.Execution, error)
	Executions(ctx context.Context, id string, limit int) ([]api.ExecutionSummary, error)
}

// ProcessBackend owns a session's background processes.
type ProcessBackend interface {
	// StartProcess starts a command in the background; Processes lists a
	// session's processes, SignalProcess signals one; ProcessLogs opens a
	// background process's output from offset, and says whether it runs
	// and how it ended (nil: not known to have).
	StartProcess(ctx context.Context, id string, req *api.ProcessRequest) (*api.Process, error)
	Processes(ctx context.Context, id string) ([]api.Process, error)
	SignalProcess(ctx context.Context, id string, pid int, signal string) error
	ProcessLogs(ctx context.Context, id string, pid int, offset int64) (io.ReadCloser, bool, *int, error)
	// WriteStdin, ResizeProcess and ProcessOutput are an attached
	// process's (started with stdin or a tty): its input (eof closes
	// it), its terminal's size, and its output from from (-1 its start,
	// -2 now, or a byte offset), followed until it ends with follow;
	// opened is called once the process is found.
	WriteStdin(ctx context.Context, id string, pid int, b []byte, eof bool) error
	ResizeProcess(ctx context.Context, id string, pid int, size api.TermSize) error
	ProcessOutput(ctx context.Context, id string, pid int, from int64, follow bool, opened func(), send func(api.ProcessOutput) error) error
}

// FileBackend moves files in and out of a session's sandbox.
type FileBackend interface {
	PutFile(ctx context.Context, id, path string, body io.Reader) (*api.FileWritten, error)
	// PutFileMeta is PutFile, the file given user metadata (its user.
	// extended attributes).
	PutFileMeta(ctx context.Context, id, path string, body io.Reader, meta map[string]string) (*api.FileWritten, error)
	OpenFile(ctx context.Context, id, path string) (*os.File, *api.FileList, error)
	// PutTar unpacks a tar stream into a folder; GetTar writes a folder
	// (or file) as one (format=tar).
	PutTar(ctx context.Context, id, path string, body io.Reader) (*api.FileWritten, error)
	GetTar(ctx context.Context, id, path string, w io.Writer) error
	DeleteFile(ctx context.Context, id, path string) error
	FileOpsBackend
}

// FileOpsBackend is the files area's fuller calls: stat, mkdir -p, move,
// listing to a depth and watching a folder.
type FileOpsBackend interface {
	StatFile(ctx context.Context, id, path string) (*api.FileStat, error)
	MakeFolder(ctx context.Context, id, path string) (*api.FolderMade, error)
	MoveFile(ctx context.Context, id, from, to string) (*api.FileStat, error)
	// ListFolder lists a folder to depth levels (1: its own entries).
	ListFolder(ctx context.Context, id, path string, depth int) (*api.FileList, error)
	// WatchFiles sends a folder's changes until ctx ends, the session's
	// sandbox ends or the folder goes; opened is called once the watch
	// is set, before any event (an error before it is an answer).
	WatchFiles(ctx context.Context, id, path string, recursive bool, opened func(), send func(api.FileEvent) error) error
}

// TemplateBackend owns templates and their root filesystems.
type TemplateBackend interface {
	Templates(ctx context.Context) ([]api.Template, error)
	Template(ctx context.Context, name string) (*api.Template, error)
	AddTemplate(ctx context.Context, req *api.Template) (*api.Template, error)
	DeleteTemplate(ctx context.Context, name string) error
	ImportRootfs(ctx context.Context, name string, body io.Reader) (*api.RootfsImported, error)
}
