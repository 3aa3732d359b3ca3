package node

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A scheduler tells nodes apart by GET /v1/node's node_id, which must
// therefore stay the same across restarts of a daemon and differ between
// daemons — between hosts, and between the daemons of one host (each has
// its own sessions and pools). In order:
//
//  1. the data dir's node_id file, when there is one: an id an operator
//     set (the scheduler's own name for the node), or one made by step 3;
//  2. derived from /etc/machine-id and the daemon's instance id, keyed as
//     systemd's sd_id128_get_machine_app_specific does (HMAC-SHA256 keyed
//     by the machine id over an id fixed for sandboxd): the machine id
//     cannot be recovered from it, nor linked to other applications' ids.
//     It is not stored, so that a data dir copied to another machine (a
//     cloned image) answers a new id there;
//  3. random, stored in the node_id file, on a host without a machine id.

// nodeIDFile is the data dir's file that holds a set or random node id.
const nodeIDFile = "node_id"

// nodeAppID is sandboxd's application id for machine-specific ids (made
// once with `systemd-id128 new`; never change it: every node id would).
var nodeAppID = [16]byte{0x18, 0x1a, 0xc0, 0x4a, 0xf9, 0xc9, 0x4a, 0x80, 0x80, 0x07, 0xb5, 0xba, 0xbf, 0x2a, 0x3a, 0xc1}

// validNodeID is what a node_id file may hold: a name a scheduler can
// take as it is.
var validNodeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// loadNodeID is the daemon's node id: from the data dir, else derived
// from the machine id at machineIDPath and instance, else made at random
// and stored.
func loadNodeID(dataDir, instance, machineIDPath string) (string, error) {
	path := filepath.Join(dataDir, nodeIDFile)
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if !validNodeID.MatchString(id) {
			return "", fmt.Errorf("%s holds no valid node id (1 to 128 letters, digits, '.', '_', ':' or '-', a letter or digit first): fix it, or remove it to derive one from the machine id", path)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if machine, ok := readMachineID(machineIDPath); ok {
		return machineSpecificID(machine, instance), nil
	}
	var r [16]byte
	_, _ = rand.Read(r[:])
	id := hex.EncodeToString(v4(r[:]))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return id, nil
}

// readMachineID reads a machine id file as systemd writes it: 32 hex
// digits. A missing, empty, "uninitialized" (first boot) or all-zero one
// is no machine id.
func readMachineID(path string) ([]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	id, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(id) != 16 || bytes.Equal(id, make([]byte, 16)) {
		return nil, false
	}
	return id, true
}

// machineSpecificID is sd_id128_get_machine_app_specific with sandboxd's
// application id, followed by the instance id so that the daemons of one
// host differ (with instance "" it is exactly systemd's, which
// `systemd-id128 machine-id --app-specific=181ac04af9c94a808007b5babf2a3ac1`
// prints).
func machineSpecificID(machine []byte, instance string) string {
	m := hmac.New(sha256.New, machine)
	m.Write(nodeAppID[:])
	m.Write([]byte(instance))
	return hex.EncodeToString(v4(m.Sum(nil)[:16]))
}

// v4 marks 16 bytes as a random (version 4, variant 1) UUID, as systemd
// marks the ids it derives.
func v4(id []byte) []byte {
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}
