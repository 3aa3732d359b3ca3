package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// splitRemote tells "ID:path" from a local path. A local path with a colon
// can be written ./a:b.
func splitRemote(arg string) (id, path string, ok bool) {
	if strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, ".") {
		return "", arg, false
	}
	id, path, ok = strings.Cut(arg, ":")
	if !ok || id == "" {
		return "", arg, false
	}
	return id, path, true
}

func newCpCmd(a *app) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "cp [-r] SRC DST",
		Short: "Copy files or folders between this machine and a session",
		Long: `Copy a file, or with -r a folder, between this machine and a session:
one side is ID:PATH (a relative PATH is under /workspace). A folder goes as
a tar stream and lands as DST/NAME, as cp -r does; symlinks are copied as
symlinks, never followed, and nothing is written outside DST.`,
		Example: `  sandboxctl cp data.csv $id:data.csv        # to /workspace/data.csv
  sandboxctl cp $id:/workspace/out.png out.png
  sandboxctl cp $id:result.json -              # to standard output
  sandboxctl cp -r ./project $id:.             # to /workspace/project
  sandboxctl cp -r $id:results ./              # to ./results`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			srcID, srcPath, srcRemote := splitRemote(args[0])
			dstID, dstPath, dstRemote := splitRemote(args[1])
			c := a.client()
			switch {
			case srcRemote == dstRemote:
				return errors.New("give exactly one side as ID:PATH, e.g. sandboxctl cp file.txt ID:file.txt")
			case recursive && dstRemote:
				if fi, err := os.Stat(srcPath); err != nil {
					return fmt.Errorf("cannot read %s: %w", srcPath, errors.Unwrap(err))
				} else if !fi.IsDir() {
					return fmt.Errorf("%s is not a folder: copy it without -r", srcPath)
				}
				return a.copyDirTo(cmd.Context(), srcPath, dstID, dstPath)
			case recursive:
				if dstPath == "-" {
					return errors.New("-r copies a folder into a local folder, not to standard output")
				}
				return a.copyDirFrom(cmd.Context(), srcID, srcPath, dstPath)
			case dstRemote:
				return upload(srcPath, func(in io.Reader) error {
					_, err := c.PutFile(cmd.Context(), dstID, dstPath, in)
					return err
				})
			}
			r, _, err := c.GetFile(cmd.Context(), srcID, srcPath)
			return download(r, err, srcPath, dstPath, "the session")
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "copy a folder and what it holds")
	return cmd
}

// upload sends the local file srcPath ("-": standard input) to put.
func upload(srcPath string, put func(io.Reader) error) error {
	var in io.Reader = os.Stdin
	if srcPath != "-" {
		f, err := os.Open(srcPath)
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", srcPath, errors.Unwrap(err))
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return fmt.Errorf("%s is a folder: copy it with -r", srcPath)
		}
		in = f
	}
	return put(in)
}

// download writes a remote file (r: nil for a folder; err: opening it
// failed) to dstPath ("-": standard output; a folder: the file's name in
// it); where names the remote side in an error.
func download(r io.ReadCloser, err error, srcPath, dstPath, where string) error {
	if err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("%s is a folder in %s: copy it with -r", srcPath, where)
	}
	defer r.Close()
	if dstPath == "-" {
		_, err = io.Copy(os.Stdout, r)
		return err
	}
	if fi, err := os.Stat(dstPath); err == nil && fi.IsDir() {
		dstPath = strings.TrimRight(dstPath, "/") + "/" + lastElem(srcPath)
	}
	out, err := os.Create(dstPath)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", dstPath, errors.Unwrap(err))
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func lastElem(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
