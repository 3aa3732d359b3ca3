package isolation

import (
	"fmt"
	"os"
)

// sealAgentDir makes a runsc sandbox's agent folder root's once its agent
// listens there. The agent made its socket in it as the sandbox's user,
// which code runs as too: code could not connect to it (gVisor refuses a
// connection from inside to a socket of the host's), but could rename it
// and listen in its place, for the daemon to find after a restart. A
// folder of root's, 0700, is closed to the sandbox's user on the host,
// whatever gVisor remembers of it. runc sandboxes have no such folder.
func sealAgentDir(p *paths) error {
	if !p.agentListens() {
		return nil
	}
	if err := os.Chown(p.agent, 0, 0); err != nil {
		return fmt.Errorf("agent folder: %w", err)
	}
	return nil
}

// unsealAgentDir gives a runsc sandbox's agent folder back to the
// sandbox's user, for its agent to listen there again (see
// sealAgentDir; connect seals it once the daemon is connected).
func (s *Sandbox) unsealAgentDir() error {
	if !s.paths.agentListens() {
		return nil
	}
	if err := os.Chown(s.paths.agent, s.agentOwner[0], s.agentOwner[1]); err != nil {
		return fmt.Errorf("agent folder: %w", err)
	}
	return nil
}
