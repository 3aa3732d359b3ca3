package agent

import (
	"context"
	"fmt"
	"time"
)

// contextVersion is the first protocol version with contexts: OpContext,
// and an exec's Context.
const contextVersion = 15

// Context actions (Request.Action of an OpContext).
const (
	ContextStart  = "start"
	ContextDelete = "delete"
)

// Context starts (ContextStart: afresh if it runs; a copy of context
// from's interpreter if from is not ""; node's for LanguageJavaScript) or
// deletes (ContextDelete) the
// agent's interpreter named name, started in cwd, and
// waits for its answer within ctx's deadline. The default context only
// restarts. Like Exec, it must not be called while another request
// waits for its answer. Agents before version 15 answer ErrUnsupported,
// and nothing is sent.
func (a *Conn) Context(ctx context.Context, action, name, cwd, from, language string) error {
	if err := a.supports(contextVersion, "a code context"); err != nil {
		return err
	}
	_, err := a.ask(ctx, Request{Op: OpContext, Action: action, Context: name, Cwd: cwd, From: from, Language: language}, TypeContext)
	return err
}

// ask sends req and reads the agent's lines until its answer, a line of
// type answer, within ctx's deadline; an error line is a *RefusedError.
// A line an earlier execution left (none is expected) is dropped.
func (a *Conn) ask(ctx context.Context, req Request, answer string) (*Message, error) {
	dl, _ := ctx.Deadline()
	_ = a.c.SetReadDeadline(dl)
	defer a.c.SetReadDeadline(time.Time{})
	if err := a.send(req, dl); err != nil {
		return nil, err
	}
	for {
		m, err := a.read()
		if err != nil {
			return nil, err
		}
		switch m.Type {
		case answer:
			return m, nil
		case TypeError:
			return nil, &RefusedError{Message: m.Message}
		}
	}
}

// RefusedError is a request the agent refused, and why.
type RefusedError struct{ Message string }

func (e *RefusedError) Error() string { return "agent: " + e.Message }

// supports says whether the agent speaks protocol since or later, else
// ErrUnsupported naming what needs it.
func (a *Conn) supports(since int, what string) error {
	if v := a.Version(); v < since {
		return fmt.Errorf("%w: %s needs agent protocol %d, this agent speaks %d", ErrUnsupported, what, since, v)
	}
	return nil
}
