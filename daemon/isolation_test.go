package daemon

import (
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/execution"
	"github.com/sandboxd/sandboxd/isolation"
)

// TestIsolationNames holds the names the runtime's contract shares with
// the API equal: the daemon hands them through unchanged
// (daemon/execution), so a value changed on one side only would reach
// clients, or the runtime, as a name the other does not know.
func TestIsolationNames(t *testing.T) {
	for _, c := range []struct{ isolation, api string }{
		{isolation.RuntimeRunc, api.RuntimeRunc},
		{isolation.RuntimeRunsc, api.RuntimeRunsc},
		{isolation.StatusOK, api.StatusOK},
		{isolation.StatusError, api.StatusError},
		{isolation.StatusTimeout, api.StatusTimeout},
		{isolation.StatusKilled, api.StatusKilled},
		{isolation.StatusInterrupted, api.StatusInterrupted},
		{isolation.LanguagePython, api.LanguagePython},
		{isolation.LanguageShell, api.LanguageShell},
		{isolation.LanguageJavaScript, api.LanguageJavaScript},
		{isolation.StreamStdout, api.EventStdout},
		{isolation.StreamStderr, api.EventStderr},
		{isolation.GatewayDir, api.MCPGatewayDir},
		{isolation.GatewaySocket, api.MCPGatewaySocket},
		{isolation.GatewaySocketEnv, api.MCPSocketEnv},
	} {
		if c.isolation != c.api {
			t.Errorf("isolation has %q where the API has %q", c.isolation, c.api)
		}
	}
}

// TestRuntimeTypes checks the conversions keep every field: a field added
// to one side only fails here.
func TestRuntimeTypes(t *testing.T) {
	e := execution.APIExecError(&isolation.ExecError{Name: "N", Value: "V", Traceback: "T"})
	if *e != (api.ExecError{Name: "N", Value: "V", Traceback: "T"}) || execution.APIExecError(nil) != nil {
		t.Errorf("APIExecError: %+v", e)
	}
	// Conversions compile only while the two structs have the same fields.
	_ = api.ExecError(isolation.ExecError{})
	_ = api.Output(isolation.RichOutput{})
	o := execution.APIOutputs([]isolation.RichOutput{{MIME: "text/html", Data: "d", Bundle: map[string]string{"text/html": "b"}}})
	if len(o) != 1 || o[0].MIME != "text/html" || o[0].Data != "d" || o[0].Bundle["text/html"] != "b" || execution.APIOutputs(nil) != nil {
		t.Errorf("APIOutputs: %+v", o)
	}
}
