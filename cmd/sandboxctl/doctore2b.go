package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/internal/hostcheck"
)

// e2bProbes are what doctor asks about the E2B gateway, fields so that
// tests answer for a made-up host.
type e2bProbes struct {
	// Unit is systemctl show's LoadState, UnitFileState and ActiveState
	// of sandboxd-e2b.service; nil (and no error) where systemd is not
	// the init.
	Unit func() (map[string]string, error)
	// Env is /etc/sandboxd/e2b.env's variables (nil: no file).
	Env func() (map[string]string, error)
	// Answer asks the gateway at addr something only it answers so.
	Answer func(ctx context.Context, addr string) error
	// Keys is how many API keys the packaged gateway has; an error when
	// its state folder cannot be read (only its user and root may).
	Keys func() (int, error)
}

func hostE2BProbes() e2bProbes {
	return e2bProbes{Unit: systemdUnit, Env: readEnvFile, Answer: e2bAnswers, Keys: packagedKeyCount}
}

// e2bGateway is doctor's line about the gateway. It is optional, so its
// absence is only worth knowing; a gateway that should serve and does not
// is a warning, never a failure of the host. listen is doctor's
// --e2b-listen ("": the packaged unit's setting, if it runs).
func e2bGateway(ctx context.Context, p e2bProbes, listen string) hostcheck.Result {
	r := hostcheck.Result{Name: "e2b gateway", Status: hostcheck.Info}
	unit, err := p.Unit()
	if err != nil {
		r.Status, r.Detail = hostcheck.Warn, fmt.Sprintf("cannot ask systemd about %s: %v", e2bUnit, err)
		return r
	}
	installed := unit != nil && unit["LoadState"] == "loaded"
	active := installed && unit["ActiveState"] == "active"
	enabled := installed && unit["UnitFileState"] == "enabled"
	if listen == "" {
		listen = os.Getenv(e2bListenEnv)
	}
	if listen == "" && active {
		listen = e2bListenDflt
		if env, err := p.Env(); err == nil && env[e2bListenEnv] != "" {
			listen = env[e2bListenEnv]
		}
	}
	var state string
	switch {
	case unit == nil:
		state = "no systemd"
	case !installed:
		state = "no " + e2bUnit + " (optional)"
	case active:
		state = e2bUnit + " active"
	case enabled:
		r.Status = hostcheck.Warn
		state = fmt.Sprintf("%s enabled but %s: journalctl -u sandboxd-e2b says why", e2bUnit, unit["ActiveState"])
	default:
		state = e2bUnit + " installed, off (optional: systemctl enable --now sandboxd-e2b)"
	}
	if listen == "" {
		r.Detail = state + "; no gateway to ask (sandboxctl e2b serve; --e2b-listen names one)"
		return r
	}
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := p.Answer(actx, listen); err != nil {
		r.Status, r.Detail = hostcheck.Warn, fmt.Sprintf("%s; nothing answers as the gateway at %s: %v", state, listen, err)
		return r
	}
	r.Status, r.Detail = hostcheck.OK, fmt.Sprintf("%s; answering at %s", state, listen)
	if active {
		switch n, err := p.Keys(); {
		case err == nil && n == 0:
			r.Status = hostcheck.Warn
			r.Detail += "; no API keys yet: sudo -u " + e2bUser + " sandboxctl e2b key create"
		case err == nil:
			r.Detail += fmt.Sprintf("; %d API key(s)", n)
		}
	}
	return r
}

// e2bAnswers asks the gateway at addr for its sandboxes without a key: the
// gateway, and only it, refuses that with E2B's 401 body before it asks
// the daemon anything.
func e2bAnswers(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // it listens on every address, loopback too
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/sandboxes", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var body struct {
		Code int `json:"code"`
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusUnauthorized || json.Unmarshal(b, &body) != nil || body.Code != http.StatusUnauthorized {
		return fmt.Errorf("GET /sandboxes without a key: %s, not the gateway's 401", res.Status)
	}
	return nil
}

// systemdUnit is systemctl show's answer for the gateway's unit.
func systemdUnit() (map[string]string, error) {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return nil, nil
	}
	out, err := exec.Command("systemctl", "show", "--property=LoadState,UnitFileState,ActiveState", e2bUnit).Output()
	if err != nil {
		return nil, err
	}
	return parseEnv(string(out)), nil
}

// readEnvFile reads the unit's EnvironmentFile.
func readEnvFile() (map[string]string, error) {
	b, err := os.ReadFile(e2bEnvFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseEnv(string(b)), nil
}

// parseEnv reads KEY=VALUE lines as systemd's EnvironmentFile= does, for
// the simple cases: comments, blank lines, quotes around a value.
func parseEnv(s string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		m[strings.TrimSpace(k)] = v
	}
	return m
}

// packagedKeyCount counts the packaged gateway's keys, without taking a
// lock or making anything: doctor only looks.
func packagedKeyCount() (int, error) {
	b, err := os.ReadFile(filepath.Join(e2bPackaged, "api-keys.json"))
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.ReadDir(e2bPackaged); err != nil {
			return 0, err
		}
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var ks []json.RawMessage
	if err := json.Unmarshal(b, &ks); err != nil {
		return 0, err
	}
	return len(ks), nil
}
