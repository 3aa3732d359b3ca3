module github.com/opencontainers/cgroups

go 1.24.0

require (
	github.com/cilium/ebpf v0.17.3
	github.com/coreos/go-systemd/v22 v22.6.0
	github.com/cyphar/filepath-securejoin v0.4.1
	github.com/godbus/dbus/v5 v5.1.0
	github.com/moby/sys/mountinfo v0.7.2
	github.com/moby/sys/userns v0.1.0
	github.com/sirupsen/logrus v1.9.3
	golang.org/x/sys v0.30.0
)
