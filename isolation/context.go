package isolation

import (
	"context"
	"time"

	"github.com/sandboxd/sandboxd/isolation/agent"
)

// ContextDefault is the context of a sandbox's first interpreter.
const ContextDefault = agent.ContextDefault

// ErrContextUnsupported is a sandbox whose agent (an older daemon's)
// has one interpreter: contexts need the sandbox restarted.
var ErrContextUnsupported = agent.ErrUnsupported

// contextWait bounds a context's start when ctx does not: the template's
// preload code runs in a new interpreter before the agent answers.
const contextWait = 3 * time.Minute

// StartContext starts the sandbox's interpreter named name, in folder
// cwd, afresh if it runs (the default one restarts): a new one of
// language (python, or javascript: node's), or with from a copy of that
// context's (forked: its state, copied on write). It
// waits for a running execution to end, as another execution would.
func (s *Sandbox) StartContext(ctx context.Context, name, cwd, from, language string) error {
	return s.context(ctx, agent.ContextStart, name, cwd, from, language)
}

// DeleteContext stops the interpreter named name, if it runs.
func (s *Sandbox) DeleteContext(ctx context.Context, name string) error {
	return s.context(ctx, agent.ContextDelete, name, "", "", "")
}

func (s *Sandbox) context(ctx context.Context, action, name, cwd, from, language string) error {
	return s.withAgent(ctx, contextWait, func(ctx context.Context, conn *agent.Conn) error {
		return conn.Context(ctx, action, name, cwd, from, language)
	})
}

// withAgent calls f with the agent's connection once no execution runs,
// within ctx's deadline, or wait from now if it has none.
func (s *Sandbox) withAgent(ctx context.Context, wait time.Duration, f func(context.Context, *agent.Conn) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	s.execMu.Lock()
	defer s.execMu.Unlock()
	conn, err := s.agentConn(time.Until(dl))
	if err != nil {
		return err
	}
	return f(ctx, conn)
}
