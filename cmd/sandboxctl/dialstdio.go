package main

import (
	"errors"
	"io"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/client"
)

// newDialStdioCmd is the far side of --host ssh://: ssh runs it on the
// daemon's machine, as the far user, and its standard input and output
// become a connection to the daemon's socket (docker's dial-stdio).
func newDialStdioCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "dial-stdio",
		Short:  "Connect standard input and output to the daemon's socket (for --host ssh://)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.remote != nil {
				return errors.New("dial-stdio reaches the local daemon: give --socket, not --host")
			}
			sock := client.New(a.socket).Socket()
			conn, err := net.Dial("unix", sock)
			if err != nil {
				return err
			}
			defer conn.Close()
			go func() {
				_, _ = io.Copy(conn, os.Stdin)
				// The client's side ended: the daemon's answers still come.
				if uc, ok := conn.(*net.UnixConn); ok {
					_ = uc.CloseWrite()
				}
			}()
			_, err = io.Copy(os.Stdout, conn)
			return err
		},
	}
}
