package e2b

import (
	"context"
	"io"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// Daemon is what the gateway asks of sandboxd: the calls of its client
// (package client), so that the gateway's tests run against a fake.
type Daemon interface {
	CreateSession(ctx context.Context, req *api.CreateSessionRequest) (*api.Session, error)
	GetSession(ctx context.Context, id string) (*api.Session, error)
	ListSessions(ctx context.Context, labels map[string]string) ([]api.Session, error)
	DeleteSession(ctx context.Context, id string) error
	PauseSession(ctx context.Context, id string) (*api.Session, error)
	ResumeSession(ctx context.Context, id string) (*api.Session, error)
	Stats(ctx context.Context, id string) (*api.Stats, error)
	GetFile(ctx context.Context, id, path string) (io.ReadCloser, *api.FileList, error)
	PutFile(ctx context.Context, id, path string, content io.Reader) (*api.FileWritten, error)
	// PutFileMeta is PutFile, the file given user metadata.
	PutFileMeta(ctx context.Context, id, path string, content io.Reader, meta map[string]string) (*api.FileWritten, error)
	DeleteFile(ctx context.Context, id, path string) error
	StatFile(ctx context.Context, id, path string) (*api.FileStat, error)
	MakeFolder(ctx context.Context, id, path string) (*api.FolderMade, error)
	MoveFile(ctx context.Context, id, from, to string) (*api.FileStat, error)
	ListFolder(ctx context.Context, id, path string, depth int) (*api.FileList, error)
	// WatchFiles calls opened once the watch is set, then fn for each
	// change, until ctx ends or the daemon ends the stream.
	WatchFiles(ctx context.Context, id, path string, recursive bool, opened func(), fn func(api.FileEvent) error) error
	StartProcess(ctx context.Context, id string, req *api.ProcessRequest) (*api.Process, error)
	Processes(ctx context.Context, id string) ([]api.Process, error)
	SignalProcess(ctx context.Context, id string, pid int, signal string) error
	WriteStdin(ctx context.Context, id string, pid int, b []byte, eof bool) error
	ResizeProcess(ctx context.Context, id string, pid int, size api.TermSize) error
	// ProcessOutput follows an attached process's output from from
	// ("start", "now"); opened is called once the daemon answers.
	ProcessOutput(ctx context.Context, id string, pid int, from string, follow bool, opened func(), fn func(api.ProcessOutput) error) error
	Exec(ctx context.Context, id string, req *api.ExecRequest, onEvent func(api.Event)) (*api.Execution, error)
	// SetDeadline ends the session in seconds from now (0: no deadline).
	SetDeadline(ctx context.Context, id string, seconds int) (*api.Session, error)
	CreateContext(ctx context.Context, id string, req api.CreateContextRequest) (*api.CodeContext, error)
	Contexts(ctx context.Context, id string) ([]api.CodeContext, error)
	DeleteContext(ctx context.Context, id, cid string) error
	RestartContext(ctx context.Context, id, cid string) (*api.CodeContext, error)
}

// deadlineOf is when the session ends, zero if never.
func deadlineOf(s *api.Session) time.Time {
	if s.Deadline == nil {
		return time.Time{}
	}
	return *s.Deadline
}
