package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/version"
)

func newInfoCmd(a *app) *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the daemon's version, runtime, cgroups, seccomp and session counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, err := a.client().Info(cmd.Context())
			if err != nil {
				return err
			}
			if format != "" {
				return printFormatted(os.Stdout, format, []*api.Info{info})
			}
			if asJSON {
				return printJSON(os.Stdout, info)
			}
			fmt.Printf("Server version:  %s (API v%s)\n", info.Version, info.APIVersion)
			fmt.Printf("Runtime:         %s (the default)\n", info.Runtime)
			for _, r := range info.Runtimes {
				fmt.Printf("  %-6s         %s\n", r.Name, runtimeLine(r))
			}
			fmt.Printf("Cgroup version:  %d\n", info.CgroupVersion)
			fmt.Printf("Seccomp:         %v (libseccomp %s, %d system calls allowed)\n", info.Seccomp.Enabled, info.Seccomp.LibraryVersion, info.Seccomp.Syscalls)
			fmt.Printf("Sandbox uid:     %d\n", info.SandboxUID)
			if info.Supervisor != "" {
				fmt.Printf("Supervisor:      native (%s)\n", info.Supervisor)
			} else {
				fmt.Println("Supervisor:      Python (no sandboxd-supervisor beside the daemon or in ../libexec/sandboxd)")
			}
			fmt.Printf("Warm pools:      %d of %d ready%s\n", info.Pool.Idle, max(info.Pool.Size, info.Pool.Target), poolDetail(info.Pool))
			if u := info.UserNS; u.Enabled {
				fmt.Printf("User namespaces: on (host ids %d-%d, a block of %d per session, %d of %d in use)\n",
					u.IDBase, uint64(u.IDBase)+uint64(u.Blocks)*uint64(u.BlockSize)-1, u.BlockSize, u.InUse, u.Blocks)
			} else {
				fmt.Println("User namespaces: off (code runs as the sandbox uid on the host)")
			}
			if n := info.Network; len(n.Modes) > 1 {
				v6 := "no IPv6"
				if n.Subnet6 != "" {
					v6 = "IPv6 " + n.Subnet6
				}
				fmt.Printf("Networks:        %s (subnet %s, %s, nftables table inet %s)\n", strings.Join(n.Modes, ", "), n.Subnet, v6, n.Table)
			} else if n.Problem != "" {
				fmt.Printf("Networks:        none only: %s\n", n.Problem)
			}
			switch pv := info.ProcView; pv.ServedBy {
			case api.ProcViewSystem:
				fmt.Println("/proc view:      the system's lxcfs (sessions see their own memory, CPUs, uptime)")
			case api.ProcViewDaemon:
				fmt.Println("/proc view:      the daemon's own lxcfs (sessions see their own memory, CPUs, uptime)")
			case api.ProcViewNone:
				fmt.Printf("/proc view:      the host's (%s)\n", pv.Problem)
			}
			if len(info.MCPServers) == 0 {
				fmt.Println("MCP servers:     none (the config's [mcp.servers])")
			}
			for i, s := range info.MCPServers {
				label := ""
				if i == 0 {
					label = "MCP servers:"
				}
				tools := make([]string, len(s.Tools))
				for j, t := range s.Tools {
					tools[j] = t.Name
				}
				fmt.Printf("%-16s %s (tools: %s)\n", label, s.Name, strings.Join(tools, ", "))
			}
			fmt.Printf("Sessions:        %d (%d running, %d stopped, %d failed)\n", info.Sessions.Total, info.Sessions.Running, info.Sessions.Stopped, info.Sessions.Failed)
			d, m := info.Defaults, info.Max
			fmt.Printf("Default limits:  memory %dMB, cpus %g, pids %d, disk %dMB, timeout %ds, idle %ds\n", d.MemoryMB, d.CPUs, d.Pids, d.DiskMB, d.TimeoutS, d.IdleTimeoutS)
			fmt.Printf("Maximum limits:  memory %dMB, cpus %g, pids %d, disk %dMB, timeout %ds, idle %ds\n", m.MemoryMB, m.CPUs, m.Pids, m.DiskMB, m.TimeoutS, m.IdleTimeoutS)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", formatHelp)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show the client's and the daemon's versions, and the daemon's runtimes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := map[string]any{"client": version.Version}
			info, err := a.client().Info(cmd.Context())
			var runtimes []string
			if err == nil {
				out["server"] = info.Version
				out["api"] = info.APIVersion
				for _, r := range info.Runtimes {
					if r.Usable {
						runtimes = append(runtimes, r.Name)
					}
				}
				out["runtimes"] = runtimes
			}
			if asJSON {
				if perr := printJSON(os.Stdout, out); perr != nil {
					return perr
				}
				return err
			}
			fmt.Printf("Client: %s\n", version.Version)
			if err != nil {
				return err
			}
			fmt.Printf("Server: %s (API v%s)\n", info.Version, info.APIVersion)
			fmt.Printf("Runtimes: %s\n", strings.Join(runtimes, ", "))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// poolDetail is each template's pool fill, in name order, if any has one.
func poolDetail(p api.PoolInfo) string {
	names := make([]string, 0, len(p.Templates))
	for name, f := range p.Templates {
		if f.Size > 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		f := p.Templates[name]
		parts[i] = fmt.Sprintf("%s %d/%d", name, f.Idle, max(f.Size, f.Target))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// runtimeLine says what info knows of one runtime.
func runtimeLine(r api.RuntimeInfo) string {
	if !r.Usable {
		return "not usable: " + r.Problem
	}
	var parts []string
	if r.Version != "" {
		parts = append(parts, r.Version)
	}
	if r.Platform != "" {
		parts = append(parts, "platform "+r.Platform)
	}
	if !r.Networks {
		parts = append(parts, "network \"none\" only on this host")
	}
	if len(parts) == 0 {
		return "usable"
	}
	return "usable (" + strings.Join(parts, ", ") + ")"
}
