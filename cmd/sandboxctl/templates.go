package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/sandboxd/sandboxd/api"
)

func newTemplateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "template",
		Aliases: []string{"templates"},
		Short:   "Manage templates: root filesystem, environment, preload, limits, warm pool",
		Long: `A template is what sessions start from: a root filesystem (the host's system
folders, or one imported from a tarball), environment variables, Python
preloaded when the interpreter starts, default limits, a warm pool of
sandboxes started ahead of demand, and packages installed once, when it is
added (sessions import them without a network; a session's own installs
take precedence).

A template is its owner's: names are unique per user, not per host, and
two users may each have a template "data". A name you give (template
inspect/rm, create --template) is your own template of that name, else
root's (root's templates and the built-in python are everyone's); root
giving a name gets root's own. Another user's template is named only as
UID/NAME (e.g. 1000/data), which only root, and its owner, may use; a
template's REF (template ls, a session's template) is that form for
templates of users other than root.

  sandboxctl template add data --preload 'import json, csv' --pool-size 2
  sandboxctl template add sci -p numpy==1.26.4 -p pandas --preload 'import numpy as np'
  docker export $(docker create python:3.12-slim) | gzip > py312.tar.gz
  sandboxctl template import py312 py312.tar.gz --memory 1G
  sandboxctl create --template py312`,
	}
	cmd.AddCommand(newTemplateLsCmd(a), newTemplateInspectCmd(a), newTemplateAddCmd(a), newTemplateImportCmd(a), newTemplateRmCmd(a))
	return cmd
}

func newTemplateLsCmd(a *app) *cobra.Command {
	var asJSON, quiet bool
	var format string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List templates",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := a.client().Templates(cmd.Context())
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return printJSON(os.Stdout, api.TemplateList{Templates: list})
			case format != "":
				return printFormatted(os.Stdout, format, list)
			case quiet:
				for _, t := range list {
					fmt.Println(t.Ref)
				}
				return nil
			}
			w := newTable()
			fmt.Fprintln(w, "NAME\tOWNER\tROOTFS\tPOOL\tMEMORY\tDISK\tPRELOAD\tDESCRIPTION")
			for _, t := range list {
				desc := t.Description
				if t.Error != "" {
					desc = "ERROR: " + t.Error
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", t.Name, t.OwnerUID, t.Rootfs, t.PoolIdle, deref(t.PoolSize),
					mib(t.Limits, func(l *api.LimitDefaults) *int64 { return l.MemoryMB }),
					mib(t.Limits, func(l *api.LimitDefaults) *int64 { return l.DiskMB }),
					oneLine(t.Preload, 30), oneLine(desc, 60))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	cmd.Flags().StringVar(&format, "format", "", formatHelp)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print references only (NAME, or UID/NAME for a user's but root's)")
	return cmd
}

func newTemplateInspectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "inspect NAME|UID/NAME",
		Short:             "Print a template as JSON",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeTemplates,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.client().Template(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(os.Stdout, t)
		},
	}
}

// templateFlags are what template add and import set.
type templateFlags struct {
	limitFlags
	description, preload, preloadFile string
	env, packages                     []string
	indexURL, runtime                 string
	user, home                        string
	poolSize                          int
	asJSON                            bool
}

func (f *templateFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.description, "description", "", "what the template is for")
	fs.StringArrayVarP(&f.env, "env", "e", nil, "environment variable KEY=VALUE of its sessions (repeatable)")
	fs.StringVar(&f.preload, "preload", "", "Python run when the interpreter starts, e.g. 'import numpy as np'")
	fs.StringVar(&f.preloadFile, "preload-file", "", "file of Python run when the interpreter starts")
	fs.IntVar(&f.poolSize, "pool-size", 0, "sandboxes kept started ahead of demand")
	fs.StringArrayVarP(&f.packages, "package", "p", nil, "pip requirement installed into the template when it is added, e.g. numpy==1.26.4 (repeatable)")
	fs.StringVar(&f.indexURL, "index-url", "", "package index of --package (default: the daemon's package_index_url)")
	fs.StringVar(&f.runtime, "runtime", "", `runtime of its sessions (and its pool): "runc" or "runsc" (gVisor); default: the daemon's`)
	fs.StringVar(&f.user, "user", "", `name of its sessions' user (uid 1000), e.g. "user" (default "sandbox")`)
	fs.StringVar(&f.home, "home", "", `home of --user, where code starts: "/workspace" (default) or /home/NAME, which shows the workspace too`)
	fs.BoolVar(&f.asJSON, "json", false, "print the template as JSON")
	f.limitFlags.register(fs)
}

func (f *templateFlags) template(fs *pflag.FlagSet, name, rootfs string) (*api.Template, error) {
	t := &api.Template{Name: name, Rootfs: rootfs, Description: f.description, Preload: f.preload, Packages: f.packages, IndexURL: f.indexURL, Runtime: f.runtime}
	if f.preloadFile != "" {
		if f.preload != "" {
			return nil, fmt.Errorf("give --preload or --preload-file, not both")
		}
		b, err := os.ReadFile(f.preloadFile)
		if err != nil {
			return nil, err
		}
		t.Preload = string(b)
	}
	var err error
	if t.Env, err = parseKV("environment variable", f.env); err != nil {
		return nil, err
	}
	if t.Limits, err = f.limits(fs); err != nil {
		return nil, err
	}
	if fs.Changed("pool-size") {
		t.PoolSize = &f.poolSize
	}
	if f.user != "" || f.home != "" {
		if f.user == "" {
			return nil, fmt.Errorf("--home needs --user: the name of the user it is the home of")
		}
		t.User = &api.TemplateUser{Name: f.user, Home: f.home}
	}
	return t, nil
}

func (f *templateFlags) print(t *api.Template) error {
	if f.asJSON {
		return printJSON(os.Stdout, t)
	}
	fmt.Println(t.Name)
	return nil
}

func newTemplateAddCmd(a *app) *cobra.Command {
	var f templateFlags
	var rootfs string
	cmd := &cobra.Command{
		Use:   "add NAME [flags]",
		Short: "Add a template; it must start, or it is refused with the reason",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := f.template(cmd.Flags(), args[0], rootfs)
			if err != nil {
				return err
			}
			out, err := a.client().AddTemplate(cmd.Context(), t)
			if err != nil {
				return err
			}
			return f.print(out)
		},
	}
	cmd.Flags().StringVar(&rootfs, "rootfs", api.RootfsHost, `root filesystem: "host" (its system folders, read-only) or a folder only root can write (root only)`)
	f.register(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("runtime", completeRuntime)
	_ = cmd.RegisterFlagCompletionFunc("home", completeHome)
	return cmd
}

func newTemplateImportCmd(a *app) *cobra.Command {
	var f templateFlags
	var quiet bool
	cmd := &cobra.Command{
		Use:   "import NAME FILE.tar[.gz] [flags]",
		Short: "Make a template of a root filesystem tarball (- reads standard input)",
		Long: `Unpack a root filesystem tarball into the daemon and add a template of it.
The tarball is the output of docker export, or any root filesystem tarred up; it
needs python3 in /usr/local/bin, /usr/bin or /bin. Entries that would leave the
root are refused; device nodes, fifos and sockets are left out; everything is
owned by root, without setuid or setgid bits. Root only.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			t, err := f.template(cmd.Flags(), name, "")
			if err != nil {
				return err
			}
			in, size, err := openInput(args[1])
			if err != nil {
				return err
			}
			defer in.Close()
			c := a.client()
			var body io.Reader = in
			bar := progressBar(size, "sending "+args[1], quiet)
			if bar != nil {
				r := progressbar.NewReader(in, bar)
				body = &r
			}
			imp, err := c.ImportRootfs(cmd.Context(), name, body)
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(os.Stderr)
			}
			if err != nil {
				return err
			}
			if !quiet {
				fmt.Fprintf(os.Stderr, "unpacked %d entries, %s (%d device nodes and the like left out); starting a sandbox of it\n",
					imp.Files, humanBytes(uint64(imp.Bytes)), imp.Skipped)
			}
			t.Rootfs = imp.Rootfs
			out, err := c.AddTemplate(cmd.Context(), t)
			if err != nil {
				// Leave nothing behind: the unpacked files are the daemon's.
				_ = c.DeleteTemplate(context.WithoutCancel(cmd.Context()), name)
				return err
			}
			return f.print(out)
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	f.register(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("runtime", completeRuntime)
	_ = cmd.RegisterFlagCompletionFunc("home", completeHome)
	return cmd
}

// openInput opens a file, or standard input for "-", with its size if
// known (-1 if not).
func openInput(path string) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), -1, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is a folder: tar it up first (tar -C %s -czf rootfs.tar.gz .)", path, path)
	}
	return f, fi.Size(), nil
}

// progressBar is a bar on standard error, or nil when that is not a
// terminal or the user asked for quiet.
func progressBar(size int64, what string, quiet bool) *progressbar.ProgressBar {
	if quiet || !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	return progressbar.DefaultBytes(size, what)
}

func newTemplateRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "rm NAME|UID/NAME...",
		Aliases:           []string{"remove", "delete"},
		Short:             "Remove templates no session uses",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeTemplates,
		RunE: func(cmd *cobra.Command, args []string) error {
			var failed []string
			for _, name := range args {
				if err := a.client().DeleteTemplate(cmd.Context(), name); err != nil {
					fmt.Fprintln(os.Stderr, "sandboxctl:", err)
					failed = append(failed, name)
					continue
				}
				fmt.Println(name)
			}
			if len(failed) > 0 {
				return exitError{1}
			}
			return nil
		},
	}
}

// completeTemplates completes template names.
func (a *app) completeTemplates(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	list, err := a.client().Templates(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(list))
	for _, t := range list {
		names = append(names, t.Ref+"\t"+t.Description)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeMCPServers completes --mcp with the daemon's MCP servers.
func (a *app) completeMCPServers(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	info, err := a.client().Info(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(info.MCPServers))
	for _, s := range info.MCPServers {
		names = append(names, s.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func mib(l *api.LimitDefaults, field func(*api.LimitDefaults) *int64) string {
	if l == nil || field(l) == nil {
		return "-"
	}
	return humanBytes(uint64(*field(l)) << 20)
}

// oneLine is s on one line, cut to n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-1] + "…"
	}
	return s
}

// completeHome completes --home: the folders a template user's home may be.
func completeHome(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"/workspace", "/home/user"}, cobra.ShellCompDirectiveNoFileComp
}
