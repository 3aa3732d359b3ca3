package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
)

// Volumes for agents: the ones they may mount (create_session's volumes),
// listed. Making and deleting volumes is the operator's (sandboxctl
// volume): a model that deleted one would delete files other sessions
// keep.

// ListVolumesInput is list_volumes's.
type ListVolumesInput struct{}

// VolumesOutput is list_volumes's.
type VolumesOutput struct {
	Volumes []api.Volume `json:"volumes"`
}

func (s *Server) addVolumeTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_volumes", Description: "List your volumes: filesystems that outlive sessions, " +
		"which create_session mounts (volumes: [{name, path}]) to keep or share files between sessions."}, s.listVolumes)
}

func (s *Server) listVolumes(ctx context.Context, _ *mcp.CallToolRequest, _ ListVolumesInput) (*mcp.CallToolResult, VolumesOutput, error) {
	vs, err := s.c.Volumes(ctx)
	if err != nil {
		return nil, VolumesOutput{}, toolError(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d volumes\n", len(vs))
	for _, v := range vs {
		fmt.Fprintf(&b, "%s\t%d of %d MB used\tmounted by %d sessions\n", v.Name, v.UsedMB, v.SizeMB, len(v.MountedBy))
	}
	if vs == nil {
		vs = []api.Volume{}
	}
	return textResult(cutText(b.String(), s.opts.MaxText)), VolumesOutput{Volumes: vs}, nil
}
