package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

// newVolumeCmd manages volumes: filesystems of their own size that
// outlive sessions, which create --volume mounts.
func newVolumeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "volume",
		Short: "Manage volumes (filesystems that outlive sessions)",
		Long: `A volume is a filesystem of its own size that outlives sessions and daemon
restarts. Your sessions mount it at create (create --volume NAME:/PATH[:ro]),
several at once: each sees what the others wrote, as its own user's files.
Writes past its size fail with "No space left on device". With --share-with,
other users' sessions may mount it too (as OWNER_UID/NAME), each as its own user.`,
		Example: `  sandboxctl volume create data --size 512
  s=$(sandboxctl create --volume data:/data)
  sandboxctl exec $s --shell -c 'date > /data/when'
  sandboxctl volume ls
  sandboxctl volume cp model.bin data:/models/model.bin   # files without a session
  sandboxctl volume cp data:/when -
  sandboxctl rm $s && sandboxctl volume rm data`,
	}
	cmd.AddCommand(newVolumeCreateCmd(a), newVolumeLsCmd(a), newVolumeInspectCmd(a), newVolumeUpdateCmd(a), newVolumeRmCmd(a), newVolumeCpCmd(a))
	return cmd
}

func newVolumeCreateCmd(a *app) *cobra.Command {
	var req api.CreateVolumeRequest
	var asJSON bool
	var shareWith []uint
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Make a volume and print its name",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			for _, u := range shareWith {
				req.SharedWith = append(req.SharedWith, uint32(u))
			}
			v, err := a.client().CreateVolume(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, v)
			}
			fmt.Println(v.Name)
			return nil
		},
	}
	cmd.Flags().Int64Var(&req.SizeMB, "size", 1024, "its size in MB: writes past it fail with ENOSPC")
	cmd.Flags().UintSliceVar(&shareWith, "share-with", nil, "let this user's sessions mount it too, as OWNER_UID/NAME (repeatable, or comma-separated uids)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newVolumeLsCmd(a *app) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List volumes",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vs, err := a.client().Volumes(cmd.Context())
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return printJSON(os.Stdout, api.VolumeList{Volumes: vs})
			case quiet:
				for _, v := range vs {
					fmt.Println(v.Name)
				}
				return nil
			}
			tw := newTable()
			fmt.Fprintln(tw, "NAME\tOWNER\tSIZE\tUSED\tMOUNTED BY\tSHARED WITH\tCREATED")
			for _, v := range vs {
				by := strings.Join(v.MountedBy, ",")
				if by == "" {
					by = "-"
				}
				shared := "-"
				if len(v.SharedWith) > 0 {
					shared = strings.Trim(fmt.Sprint(v.SharedWith), "[]")
				}
				fmt.Fprintf(tw, "%s\t%d\t%d MB\t%d MB\t%s\t%s\t%s\n", v.Name, v.OwnerUID, v.SizeMB, v.UsedMB, by, shared, ago(v.CreatedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print names only")
	return cmd
}

func newVolumeUpdateCmd(a *app) *cobra.Command {
	var shareWith []uint
	var asJSON, none bool
	cmd := &cobra.Command{
		Use:   "update NAME --share-with UID... | --no-sharing",
		Short: "Change whom a volume is shared with (the users given replace the ones before)",
		Long: `update replaces the users a volume of yours is shared with by those given
(--no-sharing: with no one). A user whose sessions mount it cannot be left
out until those sessions are deleted.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeVolumes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("share-with") == none {
				return errors.New("give either --share-with UID (repeatable) or --no-sharing")
			}
			uids := []uint32{}
			for _, u := range shareWith {
				uids = append(uids, uint32(u))
			}
			v, err := a.client().UpdateVolume(cmd.Context(), args[0], uids)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, v)
			}
			fmt.Println(v.Name)
			return nil
		},
	}
	cmd.Flags().UintSliceVar(&shareWith, "share-with", nil, "the users whose sessions may mount it (repeatable, or comma-separated uids)")
	cmd.Flags().BoolVar(&none, "no-sharing", false, "share it with no one")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newVolumeInspectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "inspect NAME",
		Short:             "Print a volume as JSON",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeVolumes,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := a.client().Volume(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(os.Stdout, v)
		},
	}
}

func newVolumeRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "rm NAME...",
		Short:             "Delete volumes and their files (refused while a session mounts one)",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeVolumes,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range args {
				if err := a.client().DeleteVolume(cmd.Context(), name); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// completeVolumes completes the caller's volumes.
func (a *app) completeVolumes(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	vs, err := a.client().Volumes(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, v := range vs {
		names = append(names, fmt.Sprintf("%s\t%d MB", v.Name, v.SizeMB))
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// parseVolumeMount reads create's --volume NAME:/PATH[:ro].
func parseVolumeMount(s string) (api.VolumeMount, error) {
	parts := strings.Split(s, ":")
	bad := fmt.Errorf("--volume %q: give NAME:/PATH, or NAME:/PATH:ro for a read-only mount", s)
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !strings.HasPrefix(parts[1], "/") {
		return api.VolumeMount{}, bad
	}
	m := api.VolumeMount{Name: parts[0], Path: parts[1]}
	if len(parts) == 3 {
		switch parts[2] {
		case "ro":
			m.ReadOnly = true
		case "rw":
		default:
			return api.VolumeMount{}, bad
		}
	}
	return m, nil
}

// newVolumeCpCmd copies a file between this machine and a volume, without
// a session.
func newVolumeCpCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy a file between this machine and a volume (no session needed)",
		Long: `Copy a file between this machine and a volume: one side is NAME:PATH, PATH
from the volume's root; the other a local path, or - for standard input or
output. Files written are the sessions' user's, as if a session wrote them.`,
		Example: `  sandboxctl volume cp data.csv data:/in/data.csv
  sandboxctl volume cp data:/out/result.json -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, srcPath, srcRemote := splitRemote(args[0])
			dst, dstPath, dstRemote := splitRemote(args[1])
			c := a.client()
			switch {
			case srcRemote == dstRemote:
				return fmt.Errorf("give exactly one side as NAME:PATH, e.g. sandboxctl volume cp file.txt data:/file.txt")
			case dstRemote:
				return upload(srcPath, func(in io.Reader) error {
					_, err := c.PutVolumeFile(cmd.Context(), dst, dstPath, in)
					return err
				})
			}
			r, _, err := c.GetVolumeFile(cmd.Context(), src, srcPath)
			return download(r, err, srcPath, dstPath, "the volume")
		},
	}
}
