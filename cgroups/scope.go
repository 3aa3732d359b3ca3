package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// Under systemd on cgroup v2 sandboxes live in a delegated transient scope
// beside the service ("sandboxd-sandboxes.scope" in the service's slice),
// not in the service's own cgroup. The service's cgroup then holds the
// daemon alone, with no controllers enabled below it, so systemd can place
// the next daemon there on a restart: systemd before 254 (no
// DelegateSubgroup=) puts a unit's new main process in the unit's top
// cgroup, which the kernel refuses while its subtree_control is set. The
// sandboxes of a restarted (or upgraded) daemon run on in the scope and the
// next daemon finds them there, as docker's and podman's containers run in
// scopes of their own.
//
// A scope is made of running processes and ends when none is left, so a
// keeper process (this binary, paused: KeeperArg) holds it while there are
// no sandboxes. Layout: <scope>/keeper, <scope>/sandboxes/<id>.

// KeeperArg is the argument that makes the daemon binary a scope keeper.
const KeeperArg = "keep-scope"

// Keep is the keeper's whole life: it waits to be stopped with its scope.
func Keep() {
	for {
		_ = unix.Pause()
	}
}

// ScopeFor is the scope holding the sandboxes of a service whose cgroup is
// own, e.g. "/system.slice/sandboxd.service", and the slice it goes in.
func ScopeFor(own string) (scope, slice string, err error) {
	unit := path.Base(own)
	if !strings.HasSuffix(unit, ".service") {
		return "", "", fmt.Errorf("cgroup %s is not a systemd service's", own)
	}
	// An instance's '@' would make the scope look like a template's.
	scope = strings.ReplaceAll(strings.TrimSuffix(unit, ".service"), "@", "-") + "-sandboxes.scope"
	slice = path.Base(path.Dir(own))
	if !strings.HasSuffix(slice, ".slice") {
		slice = "-.slice"
	}
	return scope, slice, nil
}

// setupScope finds the scope of the last daemon or starts one, and
// prepares it for sandboxes.
func setupScope(ctx context.Context, own string) (*Tree, error) {
	service := path.Base(own)
	scope, slice, err := ScopeFor(own)
	if err != nil {
		return nil, err
	}
	conn, err := sddbus.NewWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to systemd: %w", err)
	}
	defer conn.Close()
	cg, err := activeScope(ctx, conn, scope)
	if err != nil {
		return nil, err
	}
	if cg == "" {
		if err := startScope(ctx, conn, scope, slice, service); err != nil {
			return nil, err
		}
		if cg, err = activeScope(ctx, conn, scope); err != nil {
			return nil, err
		}
		if cg == "" {
			return nil, fmt.Errorf("%s stopped as soon as it started", scope)
		}
	}
	if err := prepare(cg, "keeper", "sandboxes"); err != nil {
		return nil, err
	}
	return &Tree{Version: 2, Parent: path.Join(cg, "sandboxes"), Scope: scope}, nil
}

// activeScope is the cgroup of the scope if it runs, else "". A scope
// that failed is reset so its name can be used again.
func activeScope(ctx context.Context, conn *sddbus.Conn, scope string) (string, error) {
	props, err := conn.GetUnitTypePropertiesContext(ctx, scope, "Scope")
	if err != nil {
		return "", fmt.Errorf("ask systemd about %s: %w", scope, err)
	}
	state, err := conn.GetUnitPropertyContext(ctx, scope, "ActiveState")
	if err != nil {
		return "", fmt.Errorf("ask systemd about %s: %w", scope, err)
	}
	cg, _ := props["ControlGroup"].(string)
	switch s := strings.Trim(state.Value.String(), `"`); s {
	case "active":
		if cg == "" {
			return "", fmt.Errorf("%s is active without a cgroup", scope)
		}
		return cg, nil
	case "failed":
		_ = conn.ResetFailedUnitContext(ctx, scope)
	}
	return "", nil
}

// startScope starts the keeper and a delegated scope around it, ordered
// before the service: at shutdown the daemon stops first (its sessions
// recorded as running), then the scope's sandboxes, and the next boot's
// daemon finds them gone.
func startScope(ctx context.Context, conn *sddbus.Conn, scope, slice, service string) (retErr error) {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	keeper := exec.Command(self, KeeperArg)
	keeper.Env = []string{}
	keeper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := keeper.Start(); err != nil {
		return fmt.Errorf("start the scope keeper: %w", err)
	}
	// Reaped when systemd stops the scope while this daemon runs; after
	// a restart its parent is init.
	go func() { _ = keeper.Wait() }()
	defer func() {
		if retErr != nil {
			_ = keeper.Process.Kill()
		}
	}()
	done := make(chan string, 1)
	props := []sddbus.Property{
		sddbus.PropDescription("sandboxd sandboxes"),
		sddbus.PropSlice(slice),
		sddbus.PropPids(uint32(keeper.Process.Pid)),
		sddbus.PropBefore(service),
		{Name: "Delegate", Value: dbus.MakeVariant(true)},
	}
	if _, err := conn.StartTransientUnitContext(ctx, scope, "fail", props, done); err != nil {
		return fmt.Errorf("start %s: %w", scope, err)
	}
	select {
	case r := <-done:
		if r != "done" {
			return fmt.Errorf("start %s: job %s", scope, r)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopScope ends the scope once no sandbox is left in it: the keeper goes
// with it.
func stopScope(scope string) error {
	ctx := context.Background()
	conn, err := sddbus.NewWithContext(ctx)
	if err != nil {
		return fmt.Errorf("connect to systemd: %w", err)
	}
	defer conn.Close()
	_, err = conn.StopUnitContext(ctx, scope, "replace", nil)
	return err
}

// prepare makes the delegated cgroup cg ready for sandboxes: its processes
// move into the child leaf, and the controllers sandboxes need are enabled
// for cg's children and for those of cg/folder, where they go.
func prepare(cg, leaf, folder string) error {
	root := filepath.Join(unifiedMount, cg)
	if err := leafAll(root, leaf); err != nil {
		return err
	}
	want, err := wanted(root)
	if err != nil {
		return err
	}
	if err := enable(root, want); err != nil {
		return fmt.Errorf("enable %v in %s (is it delegated?): %w", want, cg, err)
	}
	sb := filepath.Join(root, folder)
	if err := os.Mkdir(sb, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s/%s: %w", cg, folder, err)
	}
	if err := enable(sb, want); err != nil {
		return fmt.Errorf("enable %v in %s/%s: %w", want, cg, folder, err)
	}
	return nil
}

// leafAll moves every process of the cgroup dir into its child leaf.
func leafAll(dir, leaf string) error {
	l := filepath.Join(dir, leaf)
	if err := os.Mkdir(l, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, pid := range strings.Fields(string(b)) {
		if err := os.WriteFile(filepath.Join(l, "cgroup.procs"), []byte(pid), 0); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("move process %s into %s: %w", pid, l, err)
		}
	}
	return nil
}

// wanted is the controllers sandboxes need that the cgroup dir has.
func wanted(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	var want []string
	for _, c := range controllers {
		for _, a := range strings.Fields(string(b)) {
			if a == c {
				want = append(want, c)
			}
		}
	}
	return want, nil
}

// enable turns controllers on for the children of the cgroup dir, writing
// its own subtree_control only (cgroup2's ToggleControllers writes every
// ancestor's, which is outside what the daemon was given).
func enable(dir string, ctrls []string) error {
	return toggle(dir, ctrls, "+")
}

func toggle(dir string, ctrls []string, sign string) error {
	if len(ctrls) == 0 {
		return nil
	}
	s := make([]string, len(ctrls))
	for i, c := range ctrls {
		s[i] = sign + c
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(s, " ")), 0)
}
