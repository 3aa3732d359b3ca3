package execution

import (
	"github.com/sandboxd/sandboxd/api"
)

// Budget is what is left of an execution's whole answer
// (max_answer_bytes). The agent bounds its answer itself since protocol 4;
// the daemon bounds it again as it relays it, for older agents and because
// the agent shares its sandbox with the code it runs. Output draws on it as
// it streams, then the error, the result and the outputs, in that order:
// what does not fit is dropped, and cut says so.
type Budget struct {
	left int64
	cut  bool
}

// take says how many of n bytes fit, and counts them.
func (b *Budget) Take(n int) int {
	k := min(int64(n), max(b.left, 0))
	b.left -= k
	if k < int64(n) {
		b.cut = true
	}
	return int(k)
}

// text is s cut to what fits, at a rune boundary.
func (b *Budget) Text(s string) string {
	return api.Cut(s, b.Take(len(s)))
}

// bound cuts what the agent answered after the output: the error's text,
// the result, the outputs that do not fit whole.
func (b *Budget) Bound(e *api.Execution) {
	if e.Error != nil {
		e.Error = &api.ExecError{Name: b.Text(e.Error.Name), Value: b.Text(e.Error.Value), Traceback: b.Text(e.Error.Traceback)}
	}
	if e.Result != nil {
		r := b.Text(*e.Result)
		e.Result = &r
	}
	kept := e.Outputs[:0]
	for _, o := range e.Outputs {
		if b.Output(o) {
			kept = append(kept, o)
		}
	}
	e.Outputs = kept
	e.Truncated = e.Truncated || b.cut
}

// output says whether o fits whole, and counts it if it does: an output
// is never cut, only dropped.
func (b *Budget) Output(o api.Output) bool {
	n := OutputSize(o)
	if n > b.left {
		b.cut = true
		return false
	}
	b.left -= n
	return true
}

// OutputSize is the bytes o takes in an answer: its mime, its data and
// its bundle's, as the agent counts them.
func OutputSize(o api.Output) int64 {
	n := len(o.MIME) + len(o.Data)
	for k, v := range o.Bundle {
		n += len(k) + len(v)
	}
	return int64(n)
}
