package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stream is `go test -json` of a package with a passing test, a failing one
// with a subtest, a parallel one still running when the package timed out,
// and a package without tests, as cmd/test2json writes them.
const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestOK"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"    a_test.go:9: quiet unless it fails\n"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"--- PASS: TestOK (2.50s)\n"}
{"Action":"pass","Package":"p","Test":"TestOK","Elapsed":2.5}
{"Action":"run","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"run","Package":"p","Test":"TestBad/sub"}
{"Action":"output","Package":"p","Test":"TestBad/sub","Output":"    a_test.go:20: wanted 42\n"}
{"Action":"output","Package":"p","Test":"TestBad/sub","Output":"    --- FAIL: TestBad/sub (0.10s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad/sub","Elapsed":0.1}
{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (7.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad","Elapsed":7}
{"Action":"output","Package":"p","Test":"TestHang","Output":"    a_test.go:30: waiting\n"}
{"Action":"output","Package":"p","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.1s\n"}
{"Action":"fail","Package":"p","Elapsed":1.1}
{"Action":"start","Package":"q"}
{"Action":"output","Package":"q","Output":"?   \tq\t[no test files]\n"}
{"Action":"skip","Package":"q","Elapsed":0}
{"Action":"start","Package":"r"}
{"Action":"output","Package":"r","Test":"TestFast","Output":"--- PASS: TestFast (0.01s)\n"}
{"Action":"pass","Package":"r","Test":"TestFast","Elapsed":0.01}
{"Action":"output","Package":"r","Output":"PASS\n"}
{"Action":"output","Package":"r","Output":"ok  \tr\t0.2s\n"}
{"Action":"pass","Package":"r","Elapsed":0.2}
# r [r.test]
`

func TestReport(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out)
	for _, l := range strings.Split(strings.TrimSuffix(stream, "\n"), "\n") {
		r.line([]byte(l))
	}
	r.summary(2)
	want := `    a_test.go:20: wanted 42
    --- FAIL: TestBad/sub (0.10s)
--- FAIL: TestBad (7.00s)
panic: test timed out after 1s
FAIL	p	1.1s
    a_test.go:30: waiting
?   	q	[no test files]
ok  	r	0.2s
# r [r.test]
slowest tests (of 3):
      7.0s  p TestBad  FAIL
      2.5s  p TestOK
`
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if len(r.held) != 0 || len(r.order) != 0 {
		t.Errorf("output still held: %v", r.order)
	}
}

func FuzzReport(f *testing.F) {
	for _, l := range strings.Split(stream, "\n") {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, l string) {
		var out bytes.Buffer
		r := newReport(&out)
		r.line([]byte(l))
		r.flushAll()
		r.summary(5)
		if len(r.held) != 0 {
			t.Fatal("flushAll left output held")
		}
	})
}

// TestRunAll runs two go tests' worth of output side by side: both reach
// the report, and one command's failure is the run's.
func TestRunAll(t *testing.T) {
	dir := t.TempDir()
	half := strings.Index(stream, `{"Action":"start","Package":"q"}`)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte(stream[:half]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(stream[half:]), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		commands []string
		failed   bool
	}{
		{[]string{"cat " + a, "cat " + b}, false},
		{[]string{"cat " + a, "cat " + b + "; exit 3"}, true},
		{[]string{"cat " + a, "cat " + b, "exit 1"}, true},
	} {
		var out bytes.Buffer
		r := newReport(&out)
		if failed := runAll(r, c.commands); failed != c.failed {
			t.Errorf("%q: failed %v, want %v", c.commands, failed, c.failed)
		}
		for _, want := range []string{"--- FAIL: TestBad (7.00s)", "panic: test timed out", "ok  \tr\t0.2s", "# r [r.test]"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%q: no %q in:\n%s", c.commands, want, out.String())
			}
		}
		if len(r.times) != 3 {
			t.Errorf("%q: %d tests timed, want 3", c.commands, len(r.times))
		}
	}
}
