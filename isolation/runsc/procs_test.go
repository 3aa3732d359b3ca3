package runsc

import "testing"

func TestParseRunscPS(t *testing.T) {
	out := "UID       PID       PPID      C         TTY       STIME     TIME       CMD\n" +
		"1000      1         0         0         ?         11:52     120ms      python3\n" +
		"1000      7         1         0         ?         11:53     0s         sh\n"
	ps, err := parseRunscPS(out)
	if err != nil || len(ps) != 2 || ps[1].PID != 7 || ps[1].PPID != 1 || ps[1].Command != "sh" || ps[0].CPUSeconds != 0.12 {
		t.Fatalf("%+v %v", ps, err)
	}
	if _, err := parseRunscPS("PID CMD X\n"); err == nil {
		t.Fatal("a table with CMD not last")
	}
}
