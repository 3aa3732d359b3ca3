package daemon

import (
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

// TestExecDisplay: what the code displays streams as it comes, in order
// with its output, and leads the Execution's outputs; each draws on the
// answer's budget when it comes, so one that does not fit is dropped
// from the stream and the outputs alike.
func TestExecDisplay(t *testing.T) {
	for _, tt := range []struct {
		name      string
		maxAnswer int64
		events    string
		outputs   string
		truncated bool
	}{
		{"all fit", 1 << 20, "display:aa,stdout:after aa,display:bb,stdout:after bb", "aa,bb,iVBOR", false},
		// 12 bytes: "text/html" + "aa" + its bundle's 11, then 9 of
		// stdout: the second display does not fit, its stdout does.
		{"bounded", 22 + 9 + 1, "display:aa,stdout:after aa,stdout:", "aa", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *config.Config) { c.MaxAnswerBytes = tt.maxAnswer })
			d := e.start()
			s := mustCreate(t, d, root)
			var events []string
			x, err := d.Exec(root, s.ID, &api.ExecRequest{Language: api.LanguagePython, Code: "display aa bb"}, func(ev api.Event) {
				switch ev.Type {
				case api.EventDisplay:
					events = append(events, "display:"+ev.Output.Bundle["text/html"])
				default:
					events = append(events, ev.Type+":"+strings.TrimSpace(ev.Data))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			var outs []string
			for _, o := range x.Outputs {
				outs = append(outs, o.Data)
			}
			if got := strings.Join(events, ","); !strings.HasPrefix(got, strings.TrimSuffix(tt.events, "stdout:")) {
				t.Errorf("events %q, want %q", got, tt.events)
			}
			if strings.Join(outs, ",") != tt.outputs || x.Truncated != tt.truncated {
				t.Errorf("outputs %q truncated %v, want %q %v", outs, x.Truncated, tt.outputs, tt.truncated)
			}
			// The history keeps the bundles.
			kept, err := d.History().Execution(root, s.ID, x.ID)
			if err != nil || len(kept.Outputs) == 0 || kept.Outputs[0].Bundle["text/html"] != "aa" {
				t.Errorf("history: %+v %v", kept, err)
			}
		})
	}
}
