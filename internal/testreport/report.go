package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, the
// fields read here; go build's "build-output" lines share it).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// key names a top-level test: its subtests' output is held with its own.
type key struct{ pkg, test string }

type timing struct {
	key
	seconds float64
	failed  bool
}

// report turns the events back into go test's plain output. A test's
// output is held until it ends: printed if it failed, dropped if not, as
// go test does without -v.
type report struct {
	out   io.Writer
	held  map[key][]string
	order []key // held's keys in the order their tests started
	times []timing
}

func newReport(out io.Writer) *report {
	return &report{out: out, held: map[key][]string{}}
}

// line takes one line of input: an event, or anything else, which is
// printed as it is (go vet's or the linker's words, say).
func (r *report) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil || e.Action == "" {
		fmt.Fprintf(r.out, "%s\n", b)
		return
	}
	r.event(e)
}

func (r *report) event(e event) {
	if e.Test == "" {
		r.packageEvent(e)
		return
	}
	k := key{e.Package, rootOf(e.Test)}
	top := k.test == e.Test
	switch e.Action {
	case "output":
		if strings.HasPrefix(e.Output, "=== ") {
			return // -v's progress lines, which test2json mode always writes
		}
		if _, ok := r.held[k]; !ok {
			r.order = append(r.order, k)
		}
		r.held[k] = append(r.held[k], e.Output)
	case "pass", "fail":
		if !top {
			return // its lines stay with the top-level test's
		}
		if e.Action == "fail" {
			r.print(k)
		}
		r.drop(k)
		r.times = append(r.times, timing{k, e.Elapsed, e.Action == "fail"})
	case "skip":
		if top {
			r.drop(k)
		}
	}
}

func (r *report) packageEvent(e event) {
	switch e.Action {
	case "output", "build-output":
		if e.Output != "PASS\n" { // the line before "ok", which go test leaves out
			fmt.Fprint(r.out, e.Output)
		}
	case "fail":
		// A package that failed outside any test's end (a timeout's
		// panic, a crash): the tests still running were part of it.
		for _, k := range slices.Clone(r.order) {
			if k.pkg == e.Package {
				r.print(k)
				r.drop(k)
			}
		}
	}
}

func (r *report) print(k key) {
	for _, s := range r.held[k] {
		fmt.Fprint(r.out, s)
	}
}

func (r *report) drop(k key) {
	delete(r.held, k)
	r.order = slices.DeleteFunc(r.order, func(o key) bool { return o == k })
}

// flushAll prints every test's held output: the input ended early.
func (r *report) flushAll() {
	for _, k := range slices.Clone(r.order) {
		r.print(k)
		r.drop(k)
	}
}

// summary lists the n slowest top-level tests, the longest first. A
// parallel test's time counts from its release, not from its pause.
func (r *report) summary(n int) {
	if n <= 0 || len(r.times) == 0 {
		return
	}
	t := slices.Clone(r.times)
	slices.SortStableFunc(t, func(a, b timing) int {
		switch {
		case a.seconds > b.seconds:
			return -1
		case a.seconds < b.seconds:
			return 1
		}
		return 0
	})
	fmt.Fprintf(r.out, "slowest tests (of %d):\n", len(t))
	for _, x := range t[:min(n, len(t))] {
		mark := ""
		if x.failed {
			mark = "  FAIL"
		}
		fmt.Fprintf(r.out, "%9.1fs  %s %s%s\n", x.seconds, x.pkg, x.test, mark)
	}
}

// rootOf is the top-level test of a (sub)test's name.
func rootOf(test string) string {
	root, _, _ := strings.Cut(test, "/")
	return root
}
