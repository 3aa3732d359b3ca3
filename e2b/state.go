package e2b

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Identity is what makes one gateway itself across restarts: its id, which
// labels the sessions it makes (another gateway on the host, or the same
// user's own sessions, are never its to list or sweep), and the secret its
// sandboxes' access tokens derive from. It lives in the state folder
// beside the keys, made at the first start.
type Identity struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

const identityFile = "gateway.json"

// LoadIdentity reads the gateway's identity from state folder dir, making
// it the first time.
func LoadIdentity(dir string) (Identity, error) {
	p := filepath.Join(dir, identityFile)
	b, err := os.ReadFile(p)
	if err == nil {
		var id Identity
		if err := json.Unmarshal(b, &id); err != nil || id.ID == "" || len(id.Secret) < 32 {
			return Identity{}, fmt.Errorf("%s is damaged: remove it to make a new one (the access tokens of open sandboxes change)", p)
		}
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Identity{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Identity{}, err
	}
	id := Identity{ID: randomHex(6), Secret: randomHex(32)}
	b, _ = json.Marshal(id)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadIdentity(dir) // another start made it first
	}
	if err != nil {
		return Identity{}, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(p)
		return Identity{}, err
	}
	return id, f.Close()
}

// accessToken is sandbox id's envd access token: derived, not stored, so
// that a gateway restart keeps every open sandbox's token and no table of
// them can leak.
func (id Identity) accessToken(sandbox string) string { return id.derive("envd", sandbox) }

// checkToken reports whether token is sandbox's access token.
func (id Identity) checkToken(sandbox, token string) bool {
	return same(token, id.accessToken(sandbox))
}

// trafficToken is sandbox's traffic access token: E2B's guard of a
// sandbox's ports, which the code interpreter SDK sends to port 49999 as
// E2B-Traffic-Access-Token (its context calls send no other token).
func (id Identity) trafficToken(sandbox string) string { return id.derive("traffic", sandbox) }

// checkTrafficToken reports whether token is sandbox's traffic token.
func (id Identity) checkTrafficToken(sandbox, token string) bool {
	return same(token, id.trafficToken(sandbox))
}

// derive is the token of kind for sandbox: HMAC-SHA256 of both under the
// gateway's secret.
func (id Identity) derive(kind, sandbox string) string {
	m := hmac.New(sha256.New, []byte(id.Secret))
	m.Write([]byte(kind + "\x00" + sandbox))
	return hex.EncodeToString(m.Sum(nil))
}

// same compares a token in constant time.
func same(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
