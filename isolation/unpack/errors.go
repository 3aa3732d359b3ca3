package unpack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/internal/quote"
)

// entryError is what unpacking the entry name met, said for the client:
// a clash the archive made (a symlink loop, a file where a folder must be,
// a name too long) is the archive's fault, a 400; a full disk is a 429;
// anything else stays internal. None names a host path: the folder being
// filled is the daemon's (under its data dir), so a system error is told
// by its entry name and errno alone.
func entryError(name string, err error) error {
	if classified(err) {
		return err
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("unpack the archive entry %s: %s", quote.Quote(name), hostless(err))
	}
	switch errno {
	case syscall.ELOOP:
		return bad("the archive entry %s goes through a symlink loop (too many levels of symbolic links)", quote.Quote(name))
	case syscall.EEXIST, syscall.ENOTEMPTY, syscall.EISDIR, syscall.ENOTDIR:
		return bad("the archive entry %s clashes with an earlier entry: %s", quote.Quote(name), errno)
	case syscall.ENAMETOOLONG:
		return bad("the archive entry %s has a name or a link too long", quote.Quote(name))
	case syscall.ENOENT, syscall.EXDEV, syscall.EINVAL, syscall.EMLINK:
		return bad("the archive entry %s cannot be unpacked: %s", quote.Quote(name), errno)
	case syscall.ENOSPC, syscall.EDQUOT:
		return errdefs.ErrResourceExhausted.WithMessage(fmt.Sprintf("no space left to unpack the archive (at %s): the daemon's disk is full", quote.Quote(name)))
	}
	return fmt.Errorf("unpack the archive entry %s: %s", quote.Quote(name), errno)
}

// ErrTooLarge is the class of an archive over a bound of Options: the
// daemon answers it as the API's payload too large, with its message.
var ErrTooLarge = errors.New("archive too large")

// tooLarge is an error of class ErrTooLarge with a message of its own.
type tooLarge string

func (e tooLarge) Error() string        { return string(e) }
func (e tooLarge) Is(target error) bool { return target == ErrTooLarge }

// classified says whether err already has its class (and a message of
// this package's making), or is the request's end.
func classified(err error) bool {
	return errdefs.IsInvalidArgument(err) || errors.Is(err, ErrTooLarge) || errdefs.IsResourceExhausted(err) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// hostless is err's text without the path of an *os.PathError or
// *os.LinkError in it.
func hostless(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Op + ": " + le.Err.Error()
	}
	return err.Error()
}
