package integration

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// procStat is what the leak and load tests watch of the daemon process.
type procStat struct {
	fds, threads, children int
	rssKB                  int64
}

func (p procStat) String() string {
	return fmt.Sprintf("fds %d, threads %d, children %d, RSS %.1f MiB", p.fds, p.threads, p.children, float64(p.rssKB)/1024)
}

func statOf(t testing.TB, pid int) procStat {
	t.Helper()
	var p procStat
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	p.fds = len(fds)
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		switch k {
		case "VmRSS":
			p.rssKB, _ = strconv.ParseInt(fields[0], 10, 64)
		case "Threads":
			p.threads, _ = strconv.Atoi(fields[0])
		}
	}
	// Children: every process whose parent is the daemon.
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		// The fields after the command's closing parenthesis: state, ppid.
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				p.children++
			}
		}
	}
	return p
}

func hostMounts(t testing.TB) int {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
