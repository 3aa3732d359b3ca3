package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// displayClasses are values with Jupyter's rich representations, one of
// each kind, and one whose _repr_html_ raises.
const displayClasses = `import pandas as pd, time
class HTML:
    def _repr_html_(self): return '<b>é</b>'
class MD:
    def _repr_markdown_(self): return '# md'
class SVG:
    def _repr_svg_(self): return '<svg xmlns="http://www.w3.org/2000/svg"/>'
class JSON:
    def _repr_json_(self): return {'a': [1, 2]}
class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {'text/html': '<i>b</i>', 'text/plain': 'plain b', 'image/png': b'\x89PNG'}
class Raises:
    def _repr_html_(self): raise ValueError('broken repr')
    def __repr__(self): return 'Raises()'
df = pd.DataFrame({'x': [1, 2], 'y': ['a', 'b']})
`

// TestRichDisplay: display() and the last expression make Jupyter-style
// MIME bundles; what display() shows streams as it happens, in order with
// the output, and the Execution's outputs hold everything in order, with
// mime and base64 data as old clients read them; a raising _repr_ is
// skipped, user code cannot forge an output on the control pipe, and
// every output draws on max_answer_bytes.
func TestRichDisplay(t *testing.T) {
	t.Parallel()
	hostOnly(t) // pandas is the host's (make test-deps), not the VM's
	d := startDaemon(t, "max_answer_bytes = 262144\n")
	id := d.session(t, nil)
	if e := d.py(t, id, displayClasses); e.Status != api.StatusOK {
		t.Fatalf("setup: %s", describe(e))
	}

	// Streamed: each display event comes as display() runs, between the
	// output written before and after it, long before the cell ends.
	type seen struct {
		what string
		at   time.Time
	}
	var events []seen
	start := time.Now()
	e, err := d.c.Exec(context.Background(), id, &api.ExecRequest{Language: api.LanguagePython, Code: `print('first', flush=True)
display(HTML(), MD(), SVG())
print('middle')
display(JSON(), Bundle(), Raises(), df)
import os
os.write(711, b'\n{"display":{"mime":"text/html","data":"Zm9yZ2Vk"},"seq":1,"token":"guess"}\n')
print('last')
time.sleep(2)
df`}, func(ev api.Event) {
		w := ev.Type + ":" + strings.TrimSpace(ev.Data)
		if ev.Type == api.EventDisplay {
			w = ev.Type + ":" + ev.Output.MIME
		}
		events = append(events, seen{w, time.Now()})
	})
	end := time.Now()
	if err != nil || e.Status != api.StatusOK {
		t.Fatalf("exec: %v %s", err, describe(e))
	}
	var order []string
	for _, s := range events {
		order = append(order, s.what)
	}
	want := "stdout:first,display:text/html,display:text/markdown,display:image/svg+xml,stdout:middle," +
		"display:application/json,display:image/png,display:text/plain,display:text/html,stdout:last"
	if got := strings.Join(order, ","); got != want {
		t.Fatalf("stream:\n got %s\nwant %s", got, want)
	}
	if last := events[8].at; end.Sub(last) < 1500*time.Millisecond {
		t.Errorf("the last display came %v before the end (%v after the start): not streamed", end.Sub(last), last.Sub(start))
	}

	// The outputs: the displays in order, then the last expression's.
	var mimes []string
	for _, o := range e.Outputs {
		mimes = append(mimes, o.MIME)
	}
	if got := strings.Join(mimes, ","); got != "text/html,text/markdown,image/svg+xml,application/json,image/png,text/plain,text/html,text/html" {
		t.Fatalf("outputs: %s", got)
	}
	decode := func(o api.Output) string {
		b, err := base64.StdEncoding.DecodeString(o.Data)
		if err != nil {
			t.Fatalf("data of %s is not base64: %v", o.MIME, err)
		}
		return string(b)
	}
	html, md, svg, js, bundle, raises, dfShown, dfResult := e.Outputs[0], e.Outputs[1], e.Outputs[2], e.Outputs[3], e.Outputs[4], e.Outputs[5], e.Outputs[6], e.Outputs[7]
	switch {
	case decode(html) != "<b>é</b>" || html.Bundle["text/html"] != "<b>é</b>" || !strings.Contains(html.Bundle["text/plain"], "HTML object"):
		t.Errorf("HTML: %+v", html)
	case md.Bundle["text/markdown"] != "# md" || decode(md) != "# md":
		t.Errorf("markdown: %+v", md)
	case !strings.HasPrefix(svg.Bundle["image/svg+xml"], "<svg"):
		t.Errorf("SVG: %+v", svg)
	case js.Bundle["application/json"] != `{"a":[1,2]}`:
		t.Errorf("JSON: %+v", js)
	case bundle.Bundle["text/html"] != "<i>b</i>" || bundle.Bundle["text/plain"] != "plain b" || decode(bundle) != "\x89PNG" ||
		bundle.Bundle["image/png"] != base64.StdEncoding.EncodeToString([]byte("\x89PNG")):
		t.Errorf("_repr_mimebundle_: %+v", bundle)
	case raises.Bundle["text/plain"] != "Raises()" || len(raises.Bundle) != 1:
		t.Errorf("a raising _repr_html_: %+v", raises)
	case !strings.Contains(dfShown.Bundle["text/html"], "<table") || dfShown.Bundle["text/plain"] != result(e):
		t.Errorf("a displayed DataFrame: %+v (result %q)", dfShown, result(e))
	case !strings.Contains(decode(dfResult), "<table") || !strings.Contains(result(e), "x  y"):
		t.Errorf("a DataFrame as the last expression: %+v (result %q)", dfResult, result(e))
	}
	if e.Stdout != "first\nmiddle\nlast\n" {
		t.Errorf("stdout %q", e.Stdout)
	}

	// A plain answer has them too; the history keeps them; a figure is
	// what it always was: PNG, base64, no bundle.
	code, body := d.raw(t, "POST", "/v1/sessions/"+id+"/exec", `{"language":"python","code":"import matplotlib.pyplot as plt\nplt.plot([1, 2])\ndisplay(HTML())\nNone"}`)
	var raw struct {
		Outputs []map[string]any `json:"outputs"`
	}
	if err := json.Unmarshal(body, &raw); err != nil || code != 200 || len(raw.Outputs) != 2 {
		t.Fatalf("plain exec: %d %v %.300s", code, err, body)
	}
	if fig := raw.Outputs[1]; fig["mime"] != "image/png" || !strings.HasPrefix(fig["data"].(string), "iVBORw0KGgo") || fig["bundle"] != nil || len(fig) != 2 {
		t.Errorf("figure: %.200v", fig)
	}
	if h := raw.Outputs[0]; h["mime"] != "text/html" || h["data"] != base64.StdEncoding.EncodeToString([]byte("<b>é</b>")) {
		t.Errorf("an old client's view of an HTML output: %v", h)
	}
	list, err := d.c.Executions(context.Background(), id, 2)
	if err != nil || len(list) != 2 {
		t.Fatalf("history: %v %+v", err, list)
	}
	kept, err := d.c.Execution(context.Background(), id, list[1].ID)
	if err != nil || len(kept.Outputs) != 8 || kept.Outputs[4].Bundle["text/plain"] != "plain b" {
		t.Errorf("history: %v %+v", err, kept)
	}

	// The CLI notes each output on stderr and prints the rest as before.
	stdout, stderr, rc := d.ctl(t, "", "exec", id, "-c", "print('p')\ndisplay(HTML())\ndf")
	if rc != 0 || !strings.HasPrefix(stdout, "p\n") || strings.Count(stderr, "[display: text/html, ") != 2 {
		t.Errorf("sandboxctl exec: %d %q %q", rc, stdout, stderr)
	}
	stdout, _, rc = d.ctl(t, "", "exec", "--json", id, "-c", "display(MD())")
	var je api.Execution
	if err := json.Unmarshal([]byte(stdout), &je); err != nil || rc != 0 || len(je.Outputs) != 1 || je.Outputs[0].Bundle["text/markdown"] != "# md" {
		t.Errorf("sandboxctl exec --json: %d %v %q", rc, err, stdout)
	}

	// The budget: 20 displays of 20 KB and their bundles do not all fit
	// in 256 KiB; those that do come whole, streamed and answered alike.
	var shown int
	e, err = d.c.Exec(context.Background(), id, &api.ExecRequest{Language: api.LanguagePython, Code: `class Big:
    def _repr_html_(self): return 'h' * 20000
for _ in range(20):
    display(Big())
'done'`}, func(ev api.Event) {
		if ev.Type == api.EventDisplay {
			shown++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	size := len(e.Stdout) + len(e.Stderr) + len(result(e))
	for _, o := range e.Outputs {
		size += len(o.MIME) + len(o.Data)
		for k, v := range o.Bundle {
			size += len(k) + len(v)
		}
	}
	if !e.Truncated || len(e.Outputs) == 0 || len(e.Outputs) >= 20 || shown != len(e.Outputs) || size > 262144 || result(e) != "'done'" {
		t.Fatalf("bounded: %d outputs (%d streamed), %d bytes, truncated %v, result %q", len(e.Outputs), shown, size, e.Truncated, result(e))
	}
}
