package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

func newPruneCmd(a *app) *cobra.Command {
	var force, failed bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Delete every stopped session you may see (--failed: failed ones too)",
		Long: `Delete every stopped session you may see, and with --failed every failed one:
their files and history go. It asks first unless -f is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := a.client()
			list, err := c.ListSessions(cmd.Context(), nil)
			if err != nil {
				return err
			}
			var ids []string
			for _, s := range list {
				if s.Status == api.StatusStopped || (failed && s.Status == api.StatusFailed) {
					ids = append(ids, s.ID)
				}
			}
			if len(ids) == 0 {
				fmt.Println("Nothing to delete")
				return nil
			}
			if !force && !confirm(os.Stdin, os.Stderr, fmt.Sprintf("Delete %d session(s), their files and history? [y/N] ", len(ids))) {
				return errors.New("nothing deleted: answer y to delete, or give -f")
			}
			return eachID(cmd.Context(), ids, func(ctx context.Context, id string) error {
				err := c.DeleteSession(ctx, id)
				if errdefs.IsNotFound(err) {
					return nil // deleted meanwhile
				}
				return err
			})
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "do not ask")
	cmd.Flags().BoolVar(&failed, "failed", false, "delete failed sessions too")
	return cmd
}

// confirm asks question on w and reads a yes from r.
func confirm(r io.Reader, w io.Writer, question string) bool {
	fmt.Fprint(w, question)
	line, _ := bufio.NewReader(r).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
