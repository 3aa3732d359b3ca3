package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// report is one run's results.
type report struct {
	Time    time.Time `json:"time"`
	Host    string    `json:"host"`
	Scale   float64   `json:"scale"`
	Results []row     `json:"results"`
	// Phases are each daemon's step timers (mean per step), by daemon.
	Phases     map[string][]phase `json:"phases,omitempty"`
	phaseOrder []string
}

// row is one figure: a latency (milliseconds), a rate or a size, with
// its baseline and goal if it has them.
type row struct {
	Name    string   `json:"name"`
	N       int      `json:"n"`
	Latency *latency `json:"latency_ms,omitempty"`
	Value   float64  `json:"value,omitempty"`
	Unit    string   `json:"unit"`
	// Baseline names the row this one is compared with, by p50.
	Baseline    string  `json:"baseline,omitempty"`
	BaselineP50 float64 `json:"baseline_p50_ms,omitempty"`
	// BaselineValue is the baseline of a row that is not a latency, in
	// the row's unit.
	BaselineValue float64 `json:"baseline_value,omitempty"`
	Ratio         float64 `json:"ratio,omitempty"`
	Goal          string  `json:"goal,omitempty"`
	Met           *bool   `json:"met,omitempty"`
}

// goal is what a figure should reach on the reference machine.
type goal struct {
	text string
	met  func(row) bool
}

var noGoal = goal{}

func goalP50(ms float64) goal {
	return goal{fmt.Sprintf("p50 ≤ %g ms", ms), func(r row) bool { return r.Latency.P50 <= ms }}
}

// goalWarmExec: p50 within x of the baseline's, p99 within y of its own
// p50 (a steady path, no tail).
func goalWarmExec(x, y float64) goal {
	return goal{fmt.Sprintf("p50 ≤ %g× baseline, p99 ≤ %g× p50", x, y), func(r row) bool { return r.Ratio <= x && r.Latency.P99 <= y*r.Latency.P50 }}
}

// goalClaim: p50 within x of the baseline's and, where the host's own
// floor (the baseline) leaves room under p50ms, p50 ≤ p50ms and p99 ≤
// p99ms: a claim costs a lookup, one durable write and a round trip, so
// a host whose fdatasync alone takes longer cannot meet the absolute part.
func goalClaim(x, p50ms, p99ms float64) goal {
	text := fmt.Sprintf("p50 ≤ %g× baseline; p50 ≤ %g ms, p99 ≤ %g ms where the baseline is under %g ms", x, p50ms, p99ms, p50ms)
	return goal{text, func(r row) bool {
		if r.Ratio > x {
			return false
		}
		return r.BaselineP50 >= p50ms || (r.Latency.P50 <= p50ms && r.Latency.P99 <= p99ms)
	}}
}

// goalP99Of: p99 within x of base's p99 and at most ms.
func goalP99Of(x float64, base latency, ms float64) goal {
	return goal{fmt.Sprintf("p99 ≤ %g× baseline's p99 (%.2f ms) and ≤ %g ms", x, base.P99, ms), func(r row) bool {
		return r.Latency.P99 <= x*base.P99 && r.Latency.P99 <= ms
	}}
}

// goalP99Within: p99 at most the baseline's p50.
func goalP99Within() goal {
	return goal{"p99 ≤ baseline", func(r row) bool { return r.Latency.P99 <= r.BaselineP50 }}
}

// goalNotSlower: never slower than l (p50 and p99 both at most l's).
func goalNotSlower(what string, l latency) goal {
	return goal{fmt.Sprintf("p50, p99 ≤ %s's (%s, %s)", what, ms(l.P50), ms(l.P99)), func(r row) bool { return r.Latency.P50 <= l.P50 && r.Latency.P99 <= l.P99 }}
}

// goalSeconds: done within s seconds.
func goalSeconds(what string, s float64) goal {
	return goal{fmt.Sprintf("≤ %s (%.0f s)", what, s), func(r row) bool { return r.Value <= s }}
}

func goalMiB(mib float64) goal {
	return goal{fmt.Sprintf("≤ %g MiB", mib), func(r row) bool { return r.Value <= mib }}
}

func goalRatio(x float64) goal {
	return goal{fmt.Sprintf("p50 ≤ %g× baseline", x), func(r row) bool { return r.Ratio <= x }}
}

func goalRate(perS float64) goal {
	return goal{fmt.Sprintf("≥ %.3g/s", perS), func(r row) bool { return r.Value >= perS }}
}

func goalMemory(mb float64) goal {
	return goal{fmt.Sprintf("≤ %g MB", mb), func(r row) bool { return r.Value <= mb }}
}

func newReport() *report { return &report{Time: time.Now().UTC()} }

func (r *report) add(x row, g goal) {
	if g.met != nil {
		ok := g.met(x)
		x.Goal, x.Met = g.text, &ok
	}
	r.Results = append(r.Results, x)
}

func (r *report) latency(name string, l latency, baseline string, baseP50 float64, g goal) {
	x := row{Name: name, N: l.N, Latency: &l, Unit: "ms", Baseline: baseline, BaselineP50: baseP50}
	if baseP50 > 0 {
		x.Ratio = l.P50 / baseP50
	}
	r.add(x, g)
}

func (r *report) value(name string, v float64, unit string, n int, g goal) {
	r.add(row{Name: name, N: n, Value: v, Unit: unit}, g)
}

// memory records a size in MB (10^6 bytes, as the goals are written).
func (r *report) memory(name string, bytes int64, n int, g goal) {
	r.add(row{Name: name, N: n, Value: float64(bytes) / 1e6, Unit: "MB"}, g)
}

// memoryMiB records a size in MiB beside baseline's, base bytes ("": none).
func (r *report) memoryMiB(name string, bytes int64, n int, baseline string, base int64, g goal) {
	x := row{Name: name, N: n, Value: float64(bytes) / (1 << 20), Unit: "MiB"}
	if baseline != "" && base > 0 {
		x.Baseline, x.BaselineValue = baseline, float64(base)/(1<<20)
		x.Ratio = x.Value / x.BaselineValue
	}
	r.add(x, g)
}

// phases records where a daemon's creates' time went (its step timers).
func (r *report) phases(label string, ps []phase) {
	if r.Phases == nil {
		r.Phases = map[string][]phase{}
	}
	r.Phases[label] = ps
	r.phaseOrder = append(r.phaseOrder, label)
}

// print writes the table.
func (r *report) print(out io.Writer) {
	fmt.Fprintf(out, "\nsandboxd bench, %s, %s (one run, same host)\n\n", r.Time.Format(time.RFC3339), r.Host)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "measurement\tn\tp50\tp90\tp99\t\tvs baseline (p50)\tratio\tgoal\t")
	for _, x := range r.Results {
		var p50, p90, p99 string
		if x.Latency != nil {
			p50, p90, p99 = ms(x.Latency.P50), ms(x.Latency.P90), ms(x.Latency.P99)
		} else {
			p50 = fmt.Sprintf("%.1f %s", x.Value, x.Unit)
		}
		base, ratio := "", ""
		if x.Baseline != "" && x.Latency == nil {
			base = fmt.Sprintf("%s (%.1f %s)", x.Baseline, x.BaselineValue, x.Unit)
			ratio = fmt.Sprintf("%.2f×", x.Ratio)
		} else if x.Baseline != "" {
			base = fmt.Sprintf("%s (%s)", x.Baseline, ms(x.BaselineP50))
			ratio = fmt.Sprintf("%.2f×", x.Ratio)
		}
		g := x.Goal
		if x.Met != nil {
			if *x.Met {
				g += ": met"
			} else {
				g += ": NOT MET"
			}
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t\t%s\t%s\t%s\t\n", x.Name, x.N, p50, p90, p99, base, ratio, g)
	}
	w.Flush()
	if len(r.phaseOrder) == 0 {
		return
	}
	fmt.Fprintf(out, "\nwhere the time goes (the daemons' step timers, mean over the run)\n\n")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "daemon\tstep\tn\tmean\t")
	for _, label := range r.phaseOrder {
		for _, p := range r.Phases[label] {
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t\n", label, p.Name, p.N, ms(p.MeanMS))
		}
	}
	w.Flush()
}

func ms(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmt.Sprintf("%.1f ms", v)
}
