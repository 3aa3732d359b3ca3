package e2b

import (
	"context"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/e2b/keys"
)

// defaultTimeoutS is a sandbox's lifetime when a create names none:
// E2B's API's default.
const defaultTimeoutS = 15

// unsupported answers what sandboxd does not have, in one sentence.
func unsupported(what string) keyed {
	return func(http.ResponseWriter, *http.Request, keys.Key) error {
		return errorf(http.StatusNotImplemented, "%s is not supported by sandboxd's E2B gateway (docs/e2b.md lists what is)", what)
	}
}

func (g *Gateway) controlRoutes() *http.ServeMux {
	mux := http.NewServeMux()
	g.register(mux, []route{
		{"GET", "/sandboxes", g.listV1},
		{"POST", "/sandboxes", g.create},
		{"GET", "/v2/sandboxes", g.listV2},
		{"POST", "/v2/sandboxes", g.create},
		{"GET", "/sandboxes/metrics", g.metricsMany},
		{"GET", "/sandboxes/{id}", g.detail},
		{"DELETE", "/sandboxes/{id}", g.kill},
		{"POST", "/sandboxes/{id}/timeout", g.setTimeout},
		{"POST", "/sandboxes/{id}/refreshes", g.refresh},
		{"POST", "/sandboxes/{id}/pause", g.pause},
		{"POST", "/sandboxes/{id}/resume", g.resume},
		{"POST", "/sandboxes/{id}/connect", g.connect},
		{"POST", "/v2/sandboxes/{id}/connect", g.connect},
		{"GET", "/sandboxes/{id}/metrics", g.metrics},
		{"GET", "/sandboxes/{id}/logs", unsupported("a sandbox's logs")},
		{"GET", "/v2/sandboxes/{id}/logs", unsupported("a sandbox's logs")},
		{"POST", "/sandboxes/{id}/fork", unsupported("forking a sandbox")},
		{"POST", "/sandboxes/{id}/snapshots", unsupported("snapshots")},
		{"PUT", "/sandboxes/{id}/network", unsupported("changing a sandbox's network")},
		{"GET", "/snapshots", unsupported("snapshots")},
		{"GET", "/templates", unsupported("listing templates through E2B's API (sandboxctl template ls)")},
		{"POST", "/v3/templates", unsupported("building templates from a Dockerfile")},
		{"GET", "/volumes", unsupported("volumes")},
		{"POST", "/volumes", unsupported("volumes")},
	})
	return mux
}

// create makes a session for the key: POST /sandboxes and /v2/sandboxes.
func (g *Gateway) create(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	var req newSandbox
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.TemplateID == "" {
		return errdefs.ErrInvalidArgument.WithMessage("templateID is required")
	}
	switch {
	case len(req.MCP) > 0:
		return unsupported("E2B's MCP gateway in a sandbox (sandboxd grants the host's MCP servers: mcp_servers)")(w, r, k)
	case len(req.VolumeMounts) > 0:
		return unsupported("volumes")(w, r, k)
	case req.AutoPause != nil && *req.AutoPause:
		return unsupported("pausing on timeout (autoPause)")(w, r, k)
	}
	timeout := defaultTimeoutS
	if req.Timeout != nil {
		if *req.Timeout <= 0 {
			return errdefs.ErrInvalidArgument.WithMessage("timeout must be a positive number of seconds")
		}
		timeout = *req.Timeout
	}
	labels, err := g.labels(k, req.TemplateID, req.Metadata)
	if err != nil {
		return err
	}
	cr := &api.CreateSessionRequest{
		Template:     g.template(req.TemplateID),
		Env:          req.EnvVars,
		Labels:       labels,
		IdleTimeoutS: new(0), // an E2B sandbox lives to its timeout, busy or not
		DeadlineS:    &timeout,
		Network:      g.o.Network,
	}
	if req.AllowInternetAccess != nil {
		cr.Network = map[bool]string{true: "open", false: "none"}[*req.AllowInternetAccess]
	}
	if req.Network != nil && len(req.Network.AllowOut) > 0 {
		cr.Network, cr.Allow = "allowlist", req.Network.AllowOut
	}
	s, err := g.o.Daemon.CreateSession(r.Context(), cr)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, g.sandboxOf(s))
	return nil
}

// template is the sandboxd template of E2B template id t.
func (g *Gateway) template(t string) string {
	if m, ok := g.o.Templates[t]; ok {
		return m
	}
	return t
}

// sandboxOf is what a create or connect answers for s.
func (g *Gateway) sandboxOf(s *api.Session) sandbox {
	traffic := g.o.ID.trafficToken(s.ID)
	return sandbox{
		SandboxID:          s.ID,
		TemplateID:         s.Labels[labelTemplate],
		ClientID:           g.o.ClientID,
		EnvdVersion:        EnvdVersion,
		EnvdAccessToken:    g.o.ID.accessToken(s.ID),
		TrafficAccessToken: &traffic,
		Alias:              s.Labels[labelTemplate],
	}
}

// sandboxFor decodes the request's body into req (unless nil) and finds
// the key's sandbox its path names.
func (g *Gateway) sandboxFor(r *http.Request, k keys.Key, req any) (*api.Session, error) {
	if req != nil {
		if err := decode(r, req); err != nil {
			return nil, err
		}
	}
	return g.lookup(r.Context(), k, r.PathValue("id"))
}

// lookup is sandbox id if the key made it and it runs or is paused. A
// session its timeout stopped is gone, as E2B kills it: the gateway
// deletes it here, as its sweeper would.
func (g *Gateway) lookup(ctx context.Context, k keys.Key, id string) (*api.Session, error) {
	s, err := g.o.Daemon.GetSession(ctx, id)
	if errdefs.IsNotFound(err) || (err == nil && !g.owns(k, s)) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	if !live(s.Status) {
		g.discard(ctx, s.ID)
		return nil, notFound(id)
	}
	return s, nil
}

// discard deletes a session of the gateway's that has ended.
func (g *Gateway) discard(ctx context.Context, id string) {
	if err := g.o.Daemon.DeleteSession(context.WithoutCancel(ctx), id); err != nil && !errdefs.IsNotFound(err) {
		g.o.Log.Warn("delete an ended E2B sandbox", "sandbox", id, "err", err)
	}
}

func (g *Gateway) detail(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	s, err := g.sandboxFor(r, k, nil)
	if err != nil {
		return err
	}
	d := sandboxDetail{
		listedSandbox:   g.listed(s),
		EnvdAccessToken: g.o.ID.accessToken(s.ID),
		Lifecycle:       lifecycle{OnTimeout: "kill"},
	}
	open := s.Network != "none"
	d.AllowInternetAccess = &open
	if s.Network == "allowlist" {
		d.Network = &netDetail{AllowOut: s.Allow}
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// listed is s as a list shows it.
func (g *Gateway) listed(s *api.Session) listedSandbox {
	end := deadlineOf(s)
	if end.IsZero() {
		end = s.CreatedAt.Add(100 * 365 * 24 * time.Hour) // paused: no end
	}
	return listedSandbox{
		SandboxID:    s.ID,
		TemplateID:   s.Labels[labelTemplate],
		Alias:        s.Labels[labelTemplate],
		ClientID:     g.o.ClientID,
		StartedAt:    s.CreatedAt,
		EndAt:        end,
		CPUCount:     max(1, int(math.Ceil(s.Limits.CPUs))),
		MemoryMB:     s.Limits.MemoryMB,
		DiskSizeMB:   s.Limits.DiskMB,
		Metadata:     metadataOf(s.Labels),
		State:        stateOf(s.Status),
		EnvdVersion:  EnvdVersion,
		VolumeMounts: []any{},
	}
}

// paused says whether a session of status is one E2B calls paused: frozen
// in memory, or hibernated (its memory on disk); a connect resumes either.
func paused(status string) bool {
	return status == api.StatusPaused || status == api.StatusHibernated
}

// live says whether a session of status is a sandbox E2B still has.
func live(status string) bool { return status == api.StatusRunning || paused(status) }

func stateOf(status string) string {
	if paused(status) {
		return "paused"
	}
	return "running"
}

func (g *Gateway) kill(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	s, err := g.sandboxFor(r, k, nil)
	if err != nil {
		return err
	}
	if err := g.o.Daemon.DeleteSession(r.Context(), s.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// setTimeout sets the sandbox's end to timeout seconds from now, sooner
// or later than it was.
func (g *Gateway) setTimeout(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	var req timeoutRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Timeout == nil || *req.Timeout <= 0 {
		return errdefs.ErrInvalidArgument.WithMessage("timeout must be a positive number of seconds")
	}
	s, err := g.sandboxFor(r, k, nil)
	if err != nil {
		return err
	}
	if paused(s.Status) {
		return errorf(http.StatusConflict, "sandbox %s is paused: connect to it to set its timeout", s.ID)
	}
	if _, err := g.o.Daemon.SetDeadline(r.Context(), s.ID, *req.Timeout); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// refresh extends the sandbox's end to duration seconds from now (E2B's
// default 60), never shortening it.
func (g *Gateway) refresh(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	req := refreshRequest{}
	if err := decode(r, &req); err != nil {
		return err
	}
	d := 60
	if req.Duration != nil {
		if *req.Duration < 0 || *req.Duration > 3600 {
			return errdefs.ErrInvalidArgument.WithMessage("duration must be 0 to 3600 seconds")
		}
		d = *req.Duration
	}
	s, err := g.sandboxFor(r, k, nil)
	if err != nil {
		return err
	}
	if err := g.extend(r.Context(), s, d); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// extend makes s end no sooner than seconds from now.
func (g *Gateway) extend(ctx context.Context, s *api.Session, seconds int) error {
	end := deadlineOf(s)
	want := g.o.Now().Add(time.Duration(seconds) * time.Second)
	if !end.IsZero() && !end.Before(want) {
		return nil
	}
	_, err := g.o.Daemon.SetDeadline(ctx, s.ID, seconds)
	return err
}

// pause freezes the sandbox; a paused sandbox has no timeout (E2B keeps
// it until it is resumed or killed), so its deadline goes.
func (g *Gateway) pause(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	var req pauseRequest
	s, err := g.sandboxFor(r, k, &req)
	if err != nil {
		return err
	}
	if paused(s.Status) {
		return errorf(http.StatusConflict, "sandbox %s is already paused", s.ID)
	}
	if _, err := g.o.Daemon.PauseSession(r.Context(), s.ID); err != nil {
		return err
	}
	if _, err := g.o.Daemon.SetDeadline(r.Context(), s.ID, 0); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// resume is the deprecated POST /sandboxes/{id}/resume: a paused sandbox
// runs again with a new timeout; a running one is a conflict.
func (g *Gateway) resume(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	var req resumedSandbox
	s, err := g.sandboxFor(r, k, &req)
	if err != nil {
		return err
	}
	if !paused(s.Status) {
		return errorf(http.StatusConflict, "sandbox %s is already running", s.ID)
	}
	s, err = g.wake(r.Context(), s, req.Timeout)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, g.sandboxOf(s))
	return nil
}

// connect answers a sandbox to connect to: a paused one is resumed (201)
// with the timeout given; a running one (200) gets its end extended to it
// if that is later, never shortened.
func (g *Gateway) connect(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	var req connectSandbox
	s, err := g.sandboxFor(r, k, &req)
	if err != nil {
		return err
	}
	if paused(s.Status) {
		if s, err = g.wake(r.Context(), s, req.Timeout); err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, g.sandboxOf(s))
		return nil
	}
	if req.Timeout != nil && *req.Timeout > 0 {
		if err := g.extend(r.Context(), s, *req.Timeout); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, g.sandboxOf(s))
	return nil
}

// wake resumes paused s with a timeout of seconds (E2B's default when
// nil).
func (g *Gateway) wake(ctx context.Context, s *api.Session, seconds *int) (*api.Session, error) {
	t := defaultTimeoutS
	if seconds != nil {
		if *seconds <= 0 {
			return nil, errdefs.ErrInvalidArgument.WithMessage("timeout must be a positive number of seconds")
		}
		t = *seconds
	}
	// The deadline first: a resumed sandbox never runs without one.
	if _, err := g.o.Daemon.SetDeadline(ctx, s.ID, t); err != nil {
		return nil, err
	}
	return g.o.Daemon.ResumeSession(ctx, s.ID)
}

func (g *Gateway) metrics(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	s, err := g.sandboxFor(r, k, nil)
	if err != nil {
		return err
	}
	m, err := g.metricOf(r.Context(), s)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, []sandboxMetric{m})
	return nil
}

// metricsMany is GET /sandboxes/metrics?sandbox_ids=a,b: the latest
// sample of each running sandbox named.
func (g *Gateway) metricsMany(w http.ResponseWriter, r *http.Request, k keys.Key) error {
	out := map[string]sandboxMetric{}
	var ids []string
	for _, v := range r.URL.Query()["sandbox_ids"] {
		ids = append(ids, strings.Split(v, ",")...)
	}
	if len(ids) > 100 {
		return errdefs.ErrInvalidArgument.WithMessage("at most 100 sandbox_ids")
	}
	for _, id := range ids {
		s, err := g.lookup(r.Context(), k, id)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if m, err := g.metricOf(r.Context(), s); err == nil {
			out[s.ID] = m
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sandboxes": out})
	return nil
}

// metricOf is one sample of s now. CPU is its mean use since it started:
// the daemon keeps no history of samples.
func (g *Gateway) metricOf(ctx context.Context, s *api.Session) (sandboxMetric, error) {
	st, err := g.o.Daemon.Stats(ctx, s.ID)
	if err != nil {
		return sandboxMetric{}, err
	}
	cpus := max(1, int(math.Ceil(s.Limits.CPUs)))
	pct := 0.0
	if st.UptimeS > 0 {
		pct = min(100, 100*st.CPUSeconds/st.UptimeS/float64(cpus))
	}
	t := g.o.Now().UTC()
	return sandboxMetric{
		Timestamp: t, TimestampUnix: t.Unix(), CPUCount: cpus, CPUUsedPct: pct,
		MemUsed: st.MemoryBytes, MemTotal: st.MemoryLimitBytes,
		DiskUsed: st.DiskBytes, DiskTotal: st.DiskLimitBytes,
	}, nil
}
