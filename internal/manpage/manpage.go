// Package manpage writes a command tree's manual pages, for the packages.
package manpage

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/sandboxd/sandboxd/internal/version"
)

// Command is a hidden "man DIR" command that writes a page of section for
// root and each of its subcommands into DIR (make packages uses it).
func Command(root *cobra.Command, section string) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the manual pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			root.DisableAutoGenTag = true
			hdr := &doc.GenManHeader{
				Section: section,
				Source:  "sandboxd " + version.Version,
				Manual:  "sandboxd manual",
			}
			if err := doc.GenManTree(root, hdr, args[0]); err != nil {
				return fmt.Errorf("write manual pages: %w", err)
			}
			return nil
		},
	}
}
