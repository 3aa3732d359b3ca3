package daemon

import (
	"errors"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation/unpack"
)

// The one place where the runtime's types (package isolation and those
// under it) and the API's wire types meet: each changes without the other,
// as the store's records do (records.go). The names both share (runtimes,
// statuses, languages, streams) are the same strings on both sides and
// pass through unchanged; isolation_test.go holds them equal.

// An execution's exception and rich outputs are converted where the
// execution is run (execution.APIExecError, execution.APIOutputs).

// importError is an error of unpacking a root filesystem as the API
// answers it: an archive over a bound is the API's payload too large, with
// unpack's message; unpack's other classes are errdefs', which the API
// maps itself.
func importError(err error) error {
	if errors.Is(err, unpack.ErrTooLarge) {
		return api.ErrPayloadTooLarge.WithMessage(err.Error())
	}
	return err
}
