package api

// An attached process (POST …/processes with stdin or tty) is held by the
// daemon: its input written with POST …/{pid}/stdin, its terminal resized
// with POST …/{pid}/resize, its output read with GET …/{pid}/output.

// TermSize is a terminal's size.
type TermSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// SignalRequest is the body of POST …/processes/{pid}/signal.
type SignalRequest struct {
	Signal string `json:"signal"`
}

// Output streams of an attached process.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	// StreamPTY is a terminal's one stream.
	StreamPTY = "pty"
)

// ProcessOutput is one line of GET …/processes/{pid}/output: a piece of
// output (Stream and DataB64, base64), or the process's end (ExitCode).
// Offset is where the piece starts in all the process's output, for a
// caller that reads again from there (?from=N).
type ProcessOutput struct {
	Stream   string `json:"stream,omitempty"`
	DataB64  string `json:"data_b64,omitempty"`
	Offset   int64  `json:"offset"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Lost, on the first line, says how many bytes before Offset are no
	// longer kept (the daemon keeps the last MiB of a process's output).
	Lost int64 `json:"lost,omitempty"`
}
