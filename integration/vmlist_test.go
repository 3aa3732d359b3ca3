package integration

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVMListNamesTests keeps vm/tests.txt, the opt-in list of what the
// cgroup v2 + systemd VM runs, naming tests that exist: a renamed test
// would otherwise drop out of the VM without a word.
func TestVMListNamesTests(t *testing.T) {
	t.Parallel()
	if os.Getenv("SANDBOXD_TEST_BIN") != "" {
		t.Skip("the VM has the test binary, not its sources")
	}
	have := map[string]bool{}
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
				have[fd.Name.Name] = true
			}
		}
	}
	f, err := os.Open("vm/tests.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		name, _, _ := strings.Cut(sc.Text(), "#")
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		n++
		if !have[name] {
			t.Errorf("vm/tests.txt names %s, which no test in this package is", name)
		}
	}
	if n == 0 {
		t.Error("vm/tests.txt names no test")
	}
}
