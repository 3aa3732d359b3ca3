package agent

import (
	"bufio"
	"os/exec"
	"testing"
)

// BenchmarkAgentExec is a warm execution's round trip through the agent
// alone (Conn, supervisor, worker and back: no daemon, no sandbox), beside
// its floor in the same run: a python3 reading a line of code from a pipe,
// running it and answering a line. What lies between the two is the
// agent's: its two hops and its framing. "native" is the same through the
// native supervisor (supervisor/), the worker unchanged.
func BenchmarkAgentExec(b *testing.B) {
	run := func(b *testing.B, native string) {
		ra := startAgentOn(b, Files(), false, native)
		req := Request{Language: LanguagePython, Code: "x = 1", Timeout: 30}
		ra.exec(b, req) // the worker's first cell sets it up
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ra.exec(b, req)
		}
	}
	b.Run("agent", func(b *testing.B) { run(b, "") })
	b.Run("native", func(b *testing.B) { run(b, buildSupervisor(b)) })
	b.Run("pipe", func(b *testing.B) {
		cmd := exec.Command(python3(b), "-S", "-u", "-c",
			"import sys\nfor line in sys.stdin:\n    exec(line)\n    sys.stdout.write('done\\n')\n")
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		outPipe, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { in.Close(); cmd.Wait() })
		out := bufio.NewReader(outPipe)
		roundTrip := func() {
			if _, err := in.Write([]byte("x = 1\n")); err != nil {
				b.Fatal(err)
			}
			if _, err := out.ReadString('\n'); err != nil {
				b.Fatal(err)
			}
		}
		roundTrip() // python3 has started
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			roundTrip()
		}
	})
}
