package cgroups

import (
	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// cpuPeriod is the CFS period the CPU quota is a share of (100 ms, the
// kernel's default).
const cpuPeriod = 100_000

// Limits are the resources of one sandbox, in the units the API speaks.
type Limits struct {
	MemoryBytes int64
	CPUs        float64
	Pids        int64
}

// Resources turns limits into the OCI resources libcontainer applies.
// Swap is set equal to memory, which turns swap off for the sandbox: a
// memory bomb meets the limit instead of thrashing the host's disk.
func Resources(l Limits) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if l.MemoryBytes > 0 {
		mem := l.MemoryBytes
		swap := l.MemoryBytes
		r.Memory = &specs.LinuxMemory{Limit: &mem, Swap: &swap}
	}
	if l.CPUs > 0 {
		quota := int64(l.CPUs * cpuPeriod)
		period := uint64(cpuPeriod)
		r.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	if l.Pids > 0 {
		pids := l.Pids
		r.Pids = &specs.LinuxPids{Limit: &pids}
	}
	return r
}

// Usage is what a sandbox uses now.
type Usage struct {
	CPUSeconds  float64
	MemoryBytes uint64
	MemoryLimit uint64
	Pids        uint64
}

// UsageOf reads usage out of libcontainer's cgroup stats.
func UsageOf(s *ocgroups.Stats) Usage {
	if s == nil {
		return Usage{}
	}
	return Usage{
		CPUSeconds:  float64(s.CpuStats.CpuUsage.TotalUsage) / 1e9,
		MemoryBytes: s.MemoryStats.Usage.Usage,
		MemoryLimit: s.MemoryStats.Usage.Limit,
		Pids:        s.PidsStats.Current,
	}
}
