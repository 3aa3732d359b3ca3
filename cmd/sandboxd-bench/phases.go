package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// phaseFamilies are the daemon's step timers (daemon/metrics/phases.go).
var phaseFamilies = []string{"sandboxd_session_create_phase_seconds", "sandboxd_sandbox_start_phase_seconds"}

// phase is the mean time of one step over a daemon's life.
type phase struct {
	Name   string  `json:"name"`
	N      uint64  `json:"n"`
	MeanMS float64 `json:"mean_ms"`
}

// phases reads the daemon's step timers: where its creates' time went.
func (d *daemon) phases(ctx context.Context) ([]phase, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(d.dir, "s.sock"))
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sandboxd/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	var out []phase
	for _, name := range phaseFamilies {
		f := fams[name]
		if f == nil {
			continue
		}
		what := strings.TrimSuffix(strings.TrimPrefix(name, "sandboxd_"), "_phase_seconds")
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h.GetSampleCount() == 0 {
				continue
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			out = append(out, phase{
				Name: what + " " + strings.Join(labels, " "), N: h.GetSampleCount(),
				MeanMS: h.GetSampleSum() / float64(h.GetSampleCount()) * 1000,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
