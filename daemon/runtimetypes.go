package daemon

import (
	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
)

// The one place where the runtime's types (package isolation and those
// under it) and the API's wire types meet: each changes without the other,
// as the store's records do (records.go). The names both share (runtimes,
// statuses, languages, streams) are the same strings on both sides and
// pass through unchanged; isolation_test.go holds them equal.

// apiExecError is the exception an execution raised, as the API shows it.
func apiExecError(e *isolation.ExecError) *api.ExecError {
	if e == nil {
		return nil
	}
	return &api.ExecError{Name: e.Name, Value: e.Value, Traceback: e.Traceback}
}

// apiOutput is one rich output, as the API shows it.
func apiOutput(o isolation.RichOutput) api.Output {
	return api.Output{MIME: o.MIME, Data: o.Data, Bundle: o.Bundle}
}

// apiOutputs are rich outputs, as the API shows them.
func apiOutputs(outs []isolation.RichOutput) []api.Output {
	if outs == nil {
		return nil
	}
	as := make([]api.Output, len(outs))
	for i, o := range outs {
		as[i] = apiOutput(o)
	}
	return as
}
