package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
)

// Snapshots and fork for agents: keep a session's files to start from
// again (snapshot_session, then create_session's snapshot), or branch a
// session into several to try approaches side by side (fork_session).
// Deleting snapshots is the operator's (sandboxctl), as volumes are: a
// model that deleted one would delete a starting point others use.

// SnapshotSessionInput is snapshot_session's.
type SnapshotSessionInput struct {
	SessionRef
	Name string `json:"name,omitempty" jsonschema:"a name for the snapshot, unique among yours, to give create_session's snapshot instead of its id"`
}

// SnapshotOutput is snapshot_session's.
type SnapshotOutput struct {
	api.Snapshot
	// SessionCreated says the call made the session it snapshotted (the
	// server's own).
	SessionCreated bool `json:"session_created,omitempty"`
}

// ForkSessionInput is fork_session's.
type ForkSessionInput struct {
	SessionRef
	// Count is the model's: 0 (absent) is one.
	Count int `json:"count,omitempty" jsonschema:"how many sessions to make (1 to 100; default 1)"`
}

// ForkOutput is fork_session's.
type ForkOutput struct {
	SessionID      string `json:"session_id"`
	SessionCreated bool   `json:"session_created,omitempty"`
	// SessionIDs are the new sessions', what a model passes on.
	SessionIDs []string        `json:"session_ids"`
	Sessions   []SessionOutput `json:"sessions"`
}

// ListSnapshotsInput is list_snapshots's.
type ListSnapshotsInput struct{}

// SnapshotsOutput is list_snapshots's.
type SnapshotsOutput struct {
	Snapshots []api.Snapshot `json:"snapshots"`
}

func (s *Server) addSnapshotTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "snapshot_session", Description: "Keep a sandbox session's files (/workspace) and settings as a snapshot, " +
		"which outlives the session: create_session with snapshot starts new sessions from it. The session runs on; " +
		"Python variables are not kept (a session made from it starts a fresh interpreter)."}, s.snapshotSession)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "fork_session", Description: "Make new sandbox sessions that start with a session's files and settings as they are now, " +
		"to try several approaches side by side; the session runs on. Answers the new sessions' ids " +
		"(their Python interpreters start fresh: rerun what set variables)."}, s.forkSession)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_snapshots", Description: "List your snapshots (snapshot_session made them), " +
		"which create_session starts sessions from (snapshot: an id or name)."}, s.listSnapshots)
}

func (s *Server) snapshotSession(ctx context.Context, _ *mcp.CallToolRequest, in SnapshotSessionInput) (*mcp.CallToolResult, SnapshotOutput, error) {
	var snap *api.Snapshot
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		snap, err = s.c.CreateSnapshot(ctx, id, in.Name)
		return err
	})
	if err != nil {
		return nil, SnapshotOutput{}, toolError(err)
	}
	text := fmt.Sprintf("%ssnapshot %s of session %s (%d MB)", sessionLine(t), snapshotLabel(snap), t.id, snap.SizeMB)
	return textResult(text + "; create_session with snapshot " + api.Quote(snapshotRef(snap)) + " starts a session from it"),
		SnapshotOutput{Snapshot: *snap, SessionCreated: t.made}, nil
}

func (s *Server) forkSession(ctx context.Context, _ *mcp.CallToolRequest, in ForkSessionInput) (*mcp.CallToolResult, ForkOutput, error) {
	var forks []api.Session
	t, err := s.inSession(ctx, in.SessionID, func(id string) (err error) {
		forks, err = s.c.Fork(ctx, id, in.Count)
		return err
	})
	if err != nil {
		return nil, ForkOutput{}, toolError(err)
	}
	// The forks are the server's, as the sessions it creates: deleted
	// when it closes.
	s.mu.Lock()
	for _, f := range forks {
		s.created[f.ID] = true
	}
	s.mu.Unlock()
	out := ForkOutput{SessionID: t.id, SessionCreated: t.made, SessionIDs: []string{}, Sessions: []SessionOutput{}}
	for i := range forks {
		out.SessionIDs = append(out.SessionIDs, forks[i].ID)
		out.Sessions = append(out.Sessions, s.sessionOutput(&forks[i]))
	}
	text := fmt.Sprintf("%sforked session %s into %d: %s", sessionLine(t), t.id, len(forks), strings.Join(out.SessionIDs, " "))
	return textResult(text), out, nil
}

func (s *Server) listSnapshots(ctx context.Context, _ *mcp.CallToolRequest, _ ListSnapshotsInput) (*mcp.CallToolResult, SnapshotsOutput, error) {
	list, err := s.c.ListSnapshots(ctx)
	if err != nil {
		return nil, SnapshotsOutput{}, toolError(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d snapshots\n", len(list))
	for i := range list {
		sn := &list[i]
		fmt.Fprintf(&b, "%s\tof session %s\ttemplate %s\t%d MB\t%s\n", snapshotLabel(sn), sn.SessionID, sn.Template, sn.SizeMB, sn.CreatedAt.Format(time.RFC3339))
	}
	if list == nil {
		list = []api.Snapshot{}
	}
	return textResult(cutText(b.String(), s.opts.MaxText)), SnapshotsOutput{Snapshots: list}, nil
}

// snapshotRef is what create_session's snapshot takes for sn: its name,
// which a model remembers better, else its id.
func snapshotRef(sn *api.Snapshot) string {
	if sn.Name != "" {
		return sn.Name
	}
	return sn.ID
}

// snapshotLabel is sn as the tools' text shows it: id, and name if any.
func snapshotLabel(sn *api.Snapshot) string {
	if sn.Name != "" {
		return fmt.Sprintf("%s (%s)", sn.ID, api.Quote(sn.Name))
	}
	return sn.ID
}

// fromSnapshot is the request of create_session with a snapshot: the
// snapshot's settings, so of the server's defaults only those a session
// from a snapshot may have (labels, env, idle action, deadline); the
// model's other settings go on, and the daemon says which it refuses.
func (s *Server) fromSnapshot(snapshot string) api.CreateSessionRequest {
	d := s.opts.Create
	return api.CreateSessionRequest{Snapshot: snapshot, Labels: d.Labels, Env: d.Env, IdleAction: d.IdleAction, DeadlineS: d.DeadlineS}
}
