package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestAgentPythonUnits runs the agent's own Python tests (standard library
// unittest) against its modules, with the generated constants module
// beside them as in a sandbox.
func TestAgentPythonUnits(t *testing.T) {
	t.Parallel()
	py := python3(t)
	consts := t.TempDir()
	for _, f := range Files() {
		if f.Name == ConstsModule+".py" {
			if err := os.WriteFile(filepath.Join(consts, f.Name), f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	src, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-m", "unittest", "-v", "testdata/test_agent.py")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH="+src+string(os.PathListSeparator)+consts)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// python3 is the interpreter the tests run the agent with.
func python3(t testing.TB) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed: the agent is Python")
	}
	return py
}
