package isolation

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// nproc, Python's os.sched_getaffinity and thread pools built on them count
// the CPUs a process may run on, which a CPU quota does not change. So a
// sandbox whose cpus, rounded up, is fewer than the host's gets a cpuset
// of that many CPUs: nproc says ceil(cpus), and lxcfs's cpuinfo, stat and
// cpu/online agree even without its --enable-cfs. Its quota still bounds
// what it uses of them. The CPUs are picked least used first among the
// live sandboxes, so sandboxes spread over the host instead of all
// sharing CPU 0.

// cpuPicker hands sandboxes their CPUs. The zero value picks nothing:
// sandboxes run on every CPU (no cpuset controller).
type cpuPicker struct {
	// host are the CPUs sandboxes may be given: the daemon's own
	// affinity, a subset of its cgroup's cpuset.
	host []int
	mu   sync.Mutex
	// use counts, for each CPU, the sandboxes given it; given are each
	// sandbox's CPUs.
	use   map[int]int
	given map[string][]int
}

// newCPUPicker picks among the CPUs this process may run on; on says the
// cgroups take a cpuset at all.
func newCPUPicker(on bool) *cpuPicker {
	p := &cpuPicker{use: map[int]int{}, given: map[string][]int{}}
	if !on {
		return p
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return p
	}
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			p.host = append(p.host, i)
		}
	}
	return p
}

// pick gives sandbox id ceil(cpus) CPUs, least used first (lowest number
// among equals), in place of those it had, and returns them as a cpuset
// list ("1,3"). It returns "" when the sandbox is to run on every CPU:
// ceil(cpus) is not fewer than the host's, or there is no cpuset.
func (p *cpuPicker) pick(id string, cpus float64) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(id)
	n := int(math.Ceil(cpus))
	if len(p.host) == 0 || n <= 0 || n >= len(p.host) {
		return ""
	}
	order := slices.Clone(p.host)
	slices.SortStableFunc(order, func(a, b int) int { return p.use[a] - p.use[b] })
	chosen := order[:n]
	slices.Sort(chosen)
	p.take(id, chosen)
	return formatCPUs(chosen)
}

// all is every CPU sandboxes may run on, as a cpuset list: what a sandbox
// that had fewer gets back ("" without a cpuset).
func (p *cpuPicker) all() string { return formatCPUs(p.host) }

// adopt records the CPUs of a sandbox a previous daemon started (its
// cpuset list; "" for every CPU).
func (p *cpuPicker) adopt(id, list string) {
	cpus := parseCPUs(list)
	if len(cpus) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(id)
	p.take(id, cpus)
}

// release forgets the CPUs of sandbox id: it is gone.
func (p *cpuPicker) release(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(id)
}

func (p *cpuPicker) take(id string, cpus []int) {
	for _, c := range cpus {
		p.use[c]++
	}
	p.given[id] = cpus
}

func (p *cpuPicker) releaseLocked(id string) {
	for _, c := range p.given[id] {
		if p.use[c]--; p.use[c] <= 0 {
			delete(p.use, c)
		}
	}
	delete(p.given, id)
}

// formatCPUs writes CPUs as a cpuset list, "0,2,3".
func formatCPUs(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// parseCPUs reads a cpuset list ("0-2,5"); what it cannot read is left
// out.
func parseCPUs(list string) []int {
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(list), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				continue
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
