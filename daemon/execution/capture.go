package execution

import (
	"strings"
	"sync"

	"github.com/sandboxd/sandboxd/api"
)

// Capture keeps an execution's output up to the cap and forwards it. mu
// guards the output against a reader of a running execution (Text).
type Capture struct {
	mu             sync.Mutex
	limit          int64
	budget         *Budget
	onEvent        func(api.Event)
	stdout, stderr strings.Builder
	truncated      bool
	// displayed are the outputs the code displayed as it ran, those
	// that fitted the budget.
	displayed []api.Output
}

// NewCapture is the capture of an execution's output: at most limit bytes
// of each stream (max_output_bytes), answer bytes in all
// (max_answer_bytes), forwarded to onEvent if not nil.
func NewCapture(limit, answer int64, onEvent func(api.Event)) *Capture {
	return &Capture{limit: limit, budget: &Budget{left: answer}, onEvent: onEvent}
}

// Streams says whether a client takes the output as it comes.
func (c *Capture) Streams() bool { return c.onEvent != nil }

// Display keeps and forwards an output the code displayed, if it fits
// whole in what is left of the answer; one that does not is dropped, as
// outputs are.
func (c *Capture) Display(o api.Output) {
	c.mu.Lock()
	ok := c.budget.Output(o)
	if ok {
		c.displayed = append(c.displayed, o)
	}
	c.mu.Unlock()
	// One goroutine calls Display and Add, in the output's order: the
	// events keep it outside the lock, which a slow client would hold.
	if ok && c.onEvent != nil {
		c.onEvent(api.Event{Type: api.EventDisplay, Output: &o})
	}
}

// Add keeps and forwards a piece of output of kind (stdout or stderr).
func (c *Capture) Add(kind, data string) {
	c.mu.Lock()
	b := &c.stdout
	if kind == api.EventStderr {
		b = &c.stderr
	}
	if room := c.limit - int64(b.Len()); int64(len(data)) > room {
		data = data[:max(room, 0)]
		c.truncated = true
	}
	data = c.budget.Text(data)
	b.WriteString(data)
	c.mu.Unlock()
	if data != "" && c.onEvent != nil {
		c.onEvent(api.Event{Type: kind, Data: data})
	}
}

// Text is the output kept so far.
func (c *Capture) Text() (stdout, stderr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stdout.String(), c.stderr.String()
}

// Finish bounds what the agent answered after the output (e's error,
// result and outputs, with truncated as the agent said) to what is left
// of the answer, after the outputs displayed as the code ran: those came
// first and drew on the budget as they came, in order with the output.
func (c *Capture) Finish(e *api.Execution, truncated bool) {
	e.Truncated = truncated || c.truncated
	c.budget.Bound(e)
	e.Outputs = append(c.displayed, e.Outputs...)
}
