// Command sandboxd-init is the container init of sandboxd's runc
// sandboxes: libcontainer's init and nothing else, so that a sandbox's
// start does not run the whole daemon's package initialisation (see
// isolation/selfinit/handoff). The daemon runs it; it is not run by hand,
// but for --version, which the daemon asks before it hands off to it.
package main

import (
	"fmt"
	"os"

	"github.com/sandboxd/sandboxd/isolation/selfinit"
)

func main() {
	// selfinit's init ran libcontainer's and did not return, if this was a
	// container's start.
	if len(os.Args) == 2 && os.Args[1] == selfinit.VersionArg {
		fmt.Println("sandboxd-init " + selfinit.Identity())
		return
	}
	fmt.Fprintf(os.Stderr, "sandboxd-init: started by sandboxd as %q for each sandbox; not run by hand\n", selfinit.Arg)
	os.Exit(2)
}
