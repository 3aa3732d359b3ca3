package agent

import (
	"os"
	"os/exec"
	"testing"
)

// TestAgentPythonUnits runs the agent's own Python tests (standard library
// unittest) against agent.py.
func TestAgentPythonUnits(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed: the agent is Python")
	}
	cmd := exec.Command(py, "-m", "unittest", "-v", "testdata/test_agent.py")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
