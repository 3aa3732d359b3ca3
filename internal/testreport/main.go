// Command testreport reads `go test -json` and prints what `go test` prints
// without -v (each package's line, and the output of a test that failed),
// then the suite's slowest tests. make test runs the root suite through
// it: the CI's log then says where its minutes go, which a plain
// `go test ./...` hides for every package that passed.
//
//	go test -json ./... | go run ./internal/testreport -slowest 25
//	go run ./internal/testreport -slowest 25 'go test -json -race ./a/...' 'go test -json ./b'
//
// Given no commands it reads its standard input and exits 0 once it ends:
// the pipe's status is go test's (make runs it under pipefail). Given
// commands, it runs them side by side (each with `sh -c`), reads their
// standard outputs as one report, and exits 1 if any of them failed:
// make test runs the integration package without the race detector
// beside the others with it, which one go test cannot do.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
)

func main() {
	slowest := flag.Int("slowest", 20, "how many of the slowest top-level tests to list at the end (0: none)")
	flag.Parse()
	r := newReport(os.Stdout)
	if flag.NArg() == 0 {
		scan(os.Stdin, r.line)
		end(r, *slowest)
		return
	}
	failed := runAll(r, flag.Args())
	end(r, *slowest)
	if failed {
		os.Exit(1)
	}
}

// end prints what is still held, the output of tests that never ended
// (go test was killed, or its output could not be read), then the list.
func end(r *report, slowest int) {
	r.flushAll()
	r.summary(slowest)
}

// runAll runs each command, feeding all their outputs to the report as
// their lines come, and says whether any failed.
func runAll(r *report, commands []string) bool {
	lines := make(chan []byte)
	var failed atomic.Bool
	fail := func(c string, err error) {
		fmt.Fprintf(os.Stdout, "testreport: %s: %v\n", c, err)
		failed.Store(true)
	}
	var wg sync.WaitGroup
	for _, c := range commands {
		cmd := exec.Command("sh", "-c", c)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			fail(c, err)
			continue
		}
		wg.Go(func() {
			scan(out, func(b []byte) { lines <- bytes.Clone(b) })
			if err := cmd.Wait(); err != nil {
				fail(c, err)
			}
		})
	}
	go func() {
		wg.Wait()
		close(lines)
	}()
	for b := range lines {
		r.line(b)
	}
	return failed.Load()
}

// scan hands each of in's lines to each (the slice is reused after it
// returns) until in ends; then reads the rest away, so that go test is
// never left blocked on a full pipe.
func scan(in io.Reader, each func([]byte)) {
	s := bufio.NewScanner(in)
	// A test's line of output can be long (a daemon's log line, a dump).
	s.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for s.Scan() {
		each(s.Bytes())
	}
	if err := s.Err(); err != nil {
		// The report shows what was running: the likeliest cause.
		each(fmt.Appendf(nil, "testreport: reading go test's output: %v", err))
	}
	_, _ = io.Copy(io.Discard, in)
}
