package execution

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

func TestHistoryCut(t *testing.T) {
	str := func(s string) *string { return &s }
	big := strings.Repeat("é", 8<<10) // 16 KiB, two bytes a rune: cuts land on even lengths
	tests := []struct {
		name string
		in   api.Execution
		keep int64
		// want: lengths kept, outputs kept, summarized
		stdout, stderr, result, outputs int
		summarized                      bool
	}{
		{name: "fits", in: api.Execution{Stdout: "out", Stderr: "err", Result: str("1"), Outputs: []api.Output{{MIME: "image/png", Data: "AAAA"}}},
			keep: 4096, stdout: 3, stderr: 3, result: 1, outputs: 1},
		{name: "long stdout keeps stderr", in: api.Execution{Stdout: big, Stderr: "Traceback: boom"},
			keep: 4096, stdout: 4080, stderr: 15, summarized: true},
		{name: "long stderr keeps a quarter", in: api.Execution{Stdout: big, Stderr: big},
			keep: 4096, stdout: 3072, stderr: 1024, summarized: true},
		{name: "outputs that do not fit are dropped", in: api.Execution{Stdout: "x", Result: str("'r'"),
			Outputs: []api.Output{{MIME: "image/png", Data: strings.Repeat("A", 8192)}, {MIME: "text/plain", Data: "hi"}}},
			keep: 4096, stdout: 1, result: 3, outputs: 1, summarized: true},
		{name: "result cut at a rune", in: api.Execution{Result: str(big)},
			keep: 4097, result: 4096, summarized: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in
			before.Outputs = append([]api.Output(nil), tt.in.Outputs...)
			got := HistoryCut(&tt.in, tt.keep)
			if len(got.Stdout) != tt.stdout || len(got.Stderr) != tt.stderr || len(got.Outputs) != tt.outputs ||
				(got.Result != nil) != (tt.result > 0) || (got.Result != nil && len(*got.Result) != tt.result) ||
				got.Summarized != tt.summarized || (tt.summarized && !got.Truncated) {
				t.Fatalf("got stdout %d stderr %d outputs %d result %v summarized %v truncated %v",
					len(got.Stdout), len(got.Stderr), len(got.Outputs), got.Result != nil, got.Summarized, got.Truncated)
			}
			if n := Size(got); n > tt.keep {
				t.Errorf("kept %d bytes, more than %d", n, tt.keep)
			}
			// The answer itself is not touched.
			if tt.in.Stdout != before.Stdout || len(tt.in.Outputs) != len(before.Outputs) ||
				(len(before.Outputs) > 0 && !reflect.DeepEqual(tt.in.Outputs[0], before.Outputs[0])) || tt.in.Summarized {
				t.Errorf("the answer was changed: %+v", tt.in)
			}
		})
	}
}
