// Package version holds the build's version, set by the Makefile with
// -ldflags "-X github.com/sandboxd/sandboxd/internal/version.Version=…".
package version

// Version of this build.
var Version = "0.1.0-dev"
