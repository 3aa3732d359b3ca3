// Command testreport reads `go test -json` on its standard input and prints
// what `go test` prints without -v (each package's line, and the output of
// a test that failed), then the suite's slowest tests. make test runs the
// root suite through it: the CI's log then says where its minutes go, which
// a plain `go test ./...` hides for every package that passed.
//
//	go test -json ./... | go run ./internal/testreport -slowest 25
//
// It always exits 0 once its input ends: the pipe's status is go test's
// (make runs it under pipefail).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	slowest := flag.Int("slowest", 20, "how many of the slowest top-level tests to list at the end (0: none)")
	flag.Parse()
	r := newReport(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	// A test's line of output can be long (a daemon's log line, a dump).
	in.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for in.Scan() {
		r.line(in.Bytes())
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stdout, "testreport: reading go test's output: %v\n", err)
		// What was running is the likeliest cause: show it.
		r.flushAll()
	}
	r.summary(*slowest)
	_, _ = io.Copy(io.Discard, os.Stdin) // never leave go test blocked on a full pipe
}
