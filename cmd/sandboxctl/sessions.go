package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/docker/go-units"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// limitFlags are the flags that set a sandbox's limits, shared by create,
// run and template add.
type limitFlags struct {
	memory, disk         string
	cpus                 float64
	pids                 int64
	timeout, idleTimeout int
}

func (f *limitFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&f.memory, "memory", "m", "", "memory limit, e.g. 512M or 1G")
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU limit in CPUs, e.g. 0.5")
	fs.Int64Var(&f.pids, "pids", 0, "limit on processes and threads")
	fs.StringVar(&f.disk, "disk", "", "disk limit, e.g. 1G")
	fs.IntVar(&f.timeout, "timeout", 0, "default execution timeout in seconds")
	fs.IntVar(&f.idleTimeout, "idle-timeout", -1, "stop the session after this many idle seconds (0: never)")
}

// limits are the limits the flags set; the rest stay absent.
func (f *limitFlags) limits(fs *pflag.FlagSet) (*api.LimitDefaults, error) {
	l := &api.LimitDefaults{}
	var err error
	if l.MemoryMB, err = megabytes("memory", f.memory); err != nil {
		return nil, err
	}
	if l.DiskMB, err = megabytes("disk", f.disk); err != nil {
		return nil, err
	}
	if fs.Changed("cpus") {
		l.CPUs = &f.cpus
	}
	if fs.Changed("pids") {
		l.Pids = &f.pids
	}
	if fs.Changed("timeout") {
		l.TimeoutS = &f.timeout
	}
	if fs.Changed("idle-timeout") {
		l.IdleTimeoutS = &f.idleTimeout
	}
	return l, nil
}

// sessionFlags are the flags that shape a new sandbox, shared by create and
// run.
type sessionFlags struct {
	limitFlags
	template, network string
	runtime           string
	labels, env       []string
	allow             []string
	caps              capFlags
	mcp               []string
	idleAction        string
	name              string
}

// capFlags are the caps of a session's network.
type capFlags struct{ egressKbps, maxConns int }

func (c *capFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&c.egressKbps, "egress-kbps", 0, "cap the session's outgoing rate, in kilobits a second (0: none; default: the daemon's)")
	fs.IntVar(&c.maxConns, "max-connections", 0, "cap the session's open connections (0: none; default: the daemon's)")
}

// values are the caps the command line set (nil: not set).
func (c *capFlags) values(fs *pflag.FlagSet) (egress, conns *int) {
	if fs.Changed("egress-kbps") {
		egress = &c.egressKbps
	}
	if fs.Changed("max-connections") {
		conns = &c.maxConns
	}
	return egress, conns
}

func (f *sessionFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.template, "template", "", "template: your own of that name, else root's; UID/NAME for another user's (root only); default python (see sandboxctl template ls)")
	fs.StringVar(&f.runtime, "runtime", "", `runtime: "runc" or "runsc" (gVisor); default: the template's, else the daemon's (see sandboxctl info)`)
	f.limitFlags.register(fs)
	fs.StringVar(&f.network, "network", "", `network policy: "none" (the default: only loopback), "allowlist" (only what --allow names) or "open" (the public internet)`)
	fs.StringSliceVar(&f.allow, "allow", nil, "what the sandbox may reach: host, *.domain or CIDR, each optionally :port (repeatable or comma-separated; alone it means --network allowlist)")
	f.caps.register(fs)
	fs.StringArrayVarP(&f.labels, "label", "l", nil, "label key=value (repeatable)")
	fs.StringArrayVarP(&f.env, "env", "e", nil, "environment variable KEY=VALUE (repeatable)")
	fs.StringVar(&f.name, "name", "", "name the session (unique among yours): usable wherever its id is")
	fs.StringVar(&f.idleAction, "idle-action", "", `what the idle timeout does: "stop", "pause" or "hibernate" (runsc; else pause) (default: the daemon's idle_action)`)
	fs.StringSliceVar(&f.mcp, "mcp", nil, "let code in the session call this MCP server of the host's, through the gateway (repeatable or comma-separated; see sandboxctl info)")
}

// addTo registers the flags on cmd, with their completions.
func (f *sessionFlags) addTo(cmd *cobra.Command, a *app) {
	f.register(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("template", a.completeTemplates)
	_ = cmd.RegisterFlagCompletionFunc("network", completeNetwork)
	_ = cmd.RegisterFlagCompletionFunc("runtime", completeRuntime)
	_ = cmd.RegisterFlagCompletionFunc("mcp", a.completeMCPServers)
	_ = cmd.RegisterFlagCompletionFunc("idle-action", cobra.FixedCompletions([]string{"stop", "pause", "hibernate"}, cobra.ShellCompDirectiveNoFileComp))
}

var completeRuntime = cobra.FixedCompletions([]string{api.RuntimeRunc, api.RuntimeRunsc}, cobra.ShellCompDirectiveNoFileComp)

var completeNetwork = cobra.FixedCompletions([]string{api.NetworkNone, api.NetworkAllowlist, api.NetworkOpen}, cobra.ShellCompDirectiveNoFileComp)

func parseKV(what string, items []string) (map[string]string, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("bad %s %q: write it as key=value", what, it)
		}
		out[k] = v
	}
	return out, nil
}

func megabytes(flag, v string) (*int64, error) {
	if v == "" {
		return nil, nil
	}
	n, err := units.RAMInBytes(v)
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("bad --%s %q: give a size such as 512M or 2G", flag, v)
	}
	mb := (n + (1<<20 - 1)) >> 20
	return &mb, nil
}

func (f *sessionFlags) request(fs *pflag.FlagSet) (*api.CreateSessionRequest, error) {
	l, err := f.limits(fs)
	if err != nil {
		return nil, err
	}
	network := f.network
	if network == "" && len(f.allow) > 0 {
		network = api.NetworkAllowlist
	}
	egress, conns := f.caps.values(fs)
	r := &api.CreateSessionRequest{
		Template: f.template, Runtime: f.runtime, Network: network, Allow: f.allow, EgressKbps: egress, MaxConnections: conns,
		MemoryMB: l.MemoryMB, CPUs: l.CPUs, Pids: l.Pids, DiskMB: l.DiskMB, TimeoutS: l.TimeoutS, IdleTimeoutS: l.IdleTimeoutS,
		MCPServers: f.mcp, IdleAction: f.idleAction, Name: f.name,
	}
	if r.Labels, err = parseKV("label", f.labels); err != nil {
		return nil, err
	}
	if r.Env, err = parseKV("environment variable", f.env); err != nil {
		return nil, err
	}
	return r, nil
}

func newCreateCmd(a *app) *cobra.Command {
	var f sessionFlags
	var asJSON bool
	var key, deadline, snapshot string
	var volumes []string
	var count, checkpoints int
	cmd := &cobra.Command{
		Use:   "create [flags]",
		Short: "Create a session and print its id",
		Long: `Create a session and print its id.

With --idempotency-key, a repeat of the same create with the same key
within 24 hours prints the session the first one made instead of making
another: a script that retries after a timeout gets one session.

With --deadline, the session ends (is stopped, its files kept) that long
from now whatever it is doing; sandboxctl update changes it.

With --volume NAME:/PATH[:ro] (repeated), the session mounts your volumes
(sandboxctl volume create) at those paths.

With --snapshot, the session is made from a snapshot (sandboxctl snapshot
create): its files and settings; only --name, --label, --env, --idle-action,
--deadline and --volume may be given beside it. With --count N too, N
sessions are made, all or none, and their ids printed one a line.`,
		Example: `  sandboxctl create --memory 512M --name agent-1 --label agent=a1
  sandboxctl create --deadline 30m
  sandboxctl create --volume data:/data --volume models:/models:ro
  sandboxctl create --idempotency-key "$(uuidgen)"
  sandboxctl create --snapshot warm --count 4
  sandboxctl create --checkpoints 5          # then: sandboxctl undo ID`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := f.request(cmd.Flags())
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("deadline") {
				n, err := parseDeadline(deadline)
				if err != nil {
					return err
				}
				if n == 0 {
					return fmt.Errorf("bad --deadline %q: a new session's deadline is more than 0 (leave it out for none)", deadline)
				}
				req.DeadlineS = &n
			}
			for _, v := range volumes {
				m, err := parseVolumeMount(v)
				if err != nil {
					return err
				}
				req.Volumes = append(req.Volumes, m)
			}
			req.Snapshot = snapshot
			req.Checkpoints = checkpoints
			if cmd.Flags().Changed("count") {
				if key != "" {
					return errors.New("give --idempotency-key or --count, not both")
				}
				req.Count = count
				ss, err := a.client().CreateSessions(cmd.Context(), req)
				if err != nil {
					return err
				}
				return printSessions(cmd.OutOrStdout(), ss, asJSON)
			}
			var s *api.Session
			if key != "" {
				s, _, err = a.client().CreateSessionOnce(cmd.Context(), req, key)
			} else {
				s, err = a.client().CreateSession(cmd.Context(), req)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, s)
			}
			fmt.Println(s.ID)
			return nil
		},
	}
	f.addTo(cmd, a)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole session as JSON")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "a repeat with this key within 24 h answers the same session")
	cmd.Flags().StringVar(&deadline, "deadline", "", "end the session this long from now, whatever it is doing: a duration such as 30m or 1h, or seconds")
	_ = cmd.RegisterFlagCompletionFunc("deadline", cobra.NoFileCompletions)
	cmd.Flags().StringArrayVarP(&volumes, "volume", "v", nil, "mount your volume NAME at PATH: NAME:/PATH, or NAME:/PATH:ro read-only (repeatable)")
	_ = cmd.RegisterFlagCompletionFunc("volume", a.completeVolumes)
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "make the session from your snapshot (id or name): its files and settings")
	cmd.Flags().IntVar(&checkpoints, "checkpoints", 0, "keep the state before each of the last N executions (0 to 16), for sandboxctl undo")
	_ = cmd.RegisterFlagCompletionFunc("checkpoints", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("snapshot", a.completeSnapshots)
	cmd.Flags().IntVar(&count, "count", 1, fmt.Sprintf("with --snapshot, make this many sessions (1 to %d), all or none, and print their ids one a line", api.MaxCount))
	_ = cmd.RegisterFlagCompletionFunc("count", cobra.NoFileCompletions)
	return cmd
}

func newLsCmd(a *app) *cobra.Command {
	var quiet, asJSON bool
	var labels, filters []string
	var format string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"ps", "list"},
		Short:   "List sessions",
		Example: `  sandboxctl ls --filter status=running --filter label=agent=a1
  sandboxctl ls --format '{{.ID}} {{.Status}} {{.Limits.MemoryMB}}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			byLabel, err := parseKV("label filter", labels)
			if err != nil {
				return err
			}
			f, err := parseSessionFilters(filters)
			if err != nil {
				return err
			}
			for k, v := range byLabel {
				f.labels[k] = v
			}
			list, err := a.client().ListSessions(cmd.Context(), f.labels)
			if err != nil {
				return err
			}
			list = f.apply(list)
			switch {
			case format != "":
				return printFormatted(os.Stdout, format, list)
			case asJSON:
				return printJSON(os.Stdout, list)
			case quiet:
				for _, s := range list {
					fmt.Println(s.ID)
				}
				return nil
			}
			t := newTable()
			fmt.Fprintln(t, "ID\tNAME\tTEMPLATE\tRUNTIME\tSTATUS\tCREATED\tEXECS\tMEMORY\tCPUS\tLABELS")
			for _, s := range list {
				var ls []string
				for k, v := range s.Labels {
					ls = append(ls, k+"="+v)
				}
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%dMB\t%g\t%s\n", s.ID, orDash(s.Name), s.Template, s.Runtime, s.Status, ago(s.CreatedAt), s.ExecCount, s.Limits.MemoryMB, s.Limits.CPUs, strings.Join(ls, ","))
			}
			return t.Flush()
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print ids only")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringArrayVarP(&labels, "label", "l", nil, "only sessions with label key=value (repeatable)")
	cmd.Flags().StringArrayVarP(&filters, "filter", "f", nil, "only sessions that match key=value: "+strings.Join(filterKeys, ", ")+" (label=k or label=k=v; id=prefix; repeatable: one key's values are alternatives, different keys must all match)")
	cmd.Flags().StringVar(&format, "format", "", formatHelp)
	return cmd
}

func newInspectCmd(a *app) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "inspect ID...",
		Short: "Print sessions as JSON",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			var out []*api.Session
			for _, id := range ids {
				s, err := a.client().GetSession(cmd.Context(), id)
				if err != nil {
					return err
				}
				out = append(out, s)
			}
			if format != "" {
				return printFormatted(os.Stdout, format, out)
			}
			return printJSON(os.Stdout, out)
		},
	}
	cmd.Flags().StringVar(&format, "format", "", formatHelp)
	return cmd
}

// eachID runs op on every id, goes on past failures, and reports them.
// Each id done is printed, as docker prints them.
func eachID(ctx context.Context, ids []string, op func(context.Context, string) error) error {
	return forEach(ctx, ids, func(ctx context.Context, id string) error {
		if err := op(ctx, id); err != nil {
			return err
		}
		fmt.Println(id)
		return nil
	})
}

// forEach runs op on every id, goes on past failures, and reports them.
func forEach(ctx context.Context, ids []string, op func(context.Context, string) error) error {
	var errs []error
	for _, id := range ids {
		if err := op(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func newRmCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "Delete sessions: processes, files and history",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			return eachID(cmd.Context(), ids, func(ctx context.Context, id string) error {
				err := a.client().DeleteSession(ctx, id)
				if force && errdefs.IsNotFound(err) {
					return nil
				}
				return err
			})
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "do not fail on sessions that do not exist")
	return cmd
}

func newLifecycleCmd(a *app, op, short string) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   op + " ID...",
		Short: short,
		Args: func(cmd *cobra.Command, ids []string) error {
			switch {
			case all && len(ids) > 0:
				return errors.New("give session ids or --all, not both")
			case !all && len(ids) == 0:
				return fmt.Errorf("%s needs at least one session id (or --all)", op)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, ids []string) error {
			c := a.client()
			fn := map[string]func(context.Context, string) (*api.Session, error){
				"stop": c.StopSession, "start": c.StartSession, "restart": c.RestartSession,
				"pause": c.PauseSession, "resume": c.ResumeSession, "hibernate": c.HibernateSession,
			}[op]
			if all {
				var err error
				if ids, err = allIDs(cmd.Context(), c, lifecycleFrom[op]); err != nil {
					return err
				}
			}
			return eachID(cmd.Context(), ids, func(ctx context.Context, id string) error {
				_, err := fn(ctx, id)
				return err
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "every session you may see that is "+lifecycleFrom[op])
	return cmd
}

// lifecycleFrom is the status --all picks for each operation.
var lifecycleFrom = map[string]string{"stop": api.StatusRunning, "start": api.StatusStopped, "restart": api.StatusRunning,
	"pause": api.StatusRunning, "resume": api.StatusPaused, "hibernate": api.StatusRunning}

// allIDs is the ids of the caller's sessions with the given status.
func allIDs(ctx context.Context, c *client.Client, status string) ([]string, error) {
	list, err := c.ListSessions(ctx, nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range list {
		if s.Status == status {
			ids = append(ids, s.ID)
		}
	}
	return ids, nil
}

func newStatsCmd(a *app) *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "stats ID...",
		Short: "Show what sessions use now",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			var all []*api.Stats
			for _, id := range ids {
				st, err := a.client().Stats(cmd.Context(), id)
				if err != nil {
					return err
				}
				all = append(all, st)
			}
			switch {
			case asJSON:
				return printJSON(os.Stdout, all)
			case format != "":
				return printFormatted(os.Stdout, format, all)
			}
			t := newTable()
			fmt.Fprintln(t, "ID\tSTATUS\tCPU SECONDS\tMEMORY / LIMIT\tPIDS\tDISK / LIMIT\tEXECS\tUPTIME\tDNS REFUSED\tNET DENIED")
			for i, st := range all {
				disk := humanBytes(uint64(st.DiskBytes)) + " / -"
				if st.DiskLimitBytes > 0 {
					disk = humanBytes(uint64(st.DiskBytes)) + " / " + humanBytes(uint64(st.DiskLimitBytes))
				}
				dns := fmt.Sprint(st.DNSRefused)
				if st.DNSRateLimited > 0 {
					dns += fmt.Sprintf(" (%d over rate)", st.DNSRateLimited)
				}
				fmt.Fprintf(t, "%s\t%s\t%.2f\t%s / %s\t%d\t%s\t%d\t%.0fs\t%s\t%d\n", ids[i], st.Status, st.CPUSeconds,
					humanBytes(st.MemoryBytes), humanBytes(st.MemoryLimitBytes), st.Pids, disk, st.ExecCount, st.UptimeS, dns, st.NetworkDeniedPackets)
			}
			return t.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&format, "format", "", formatHelp)
	return cmd
}

// completeSessionFirst completes a session id as the first argument, and
// nothing after it.
func (a *app) completeSessionFirst(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return a.completeSessions(cmd, args, toComplete)
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeSessions completes the ids of the sessions the caller may see.
func (a *app) completeSessions(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	list, err := a.client().ListSessions(cmd.Context(), nil)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ids := make([]string, 0, len(list))
	for _, s := range list {
		ids = append(ids, s.ID+"\t"+s.Template+", "+s.Status)
		if s.Name != "" {
			ids = append(ids, s.Name+"\t"+s.ID+", "+s.Template+", "+s.Status)
		}
	}
	return ids, cobra.ShellCompDirectiveNoFileComp
}
