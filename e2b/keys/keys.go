// Package keys keeps the API keys of the E2B gateway: each is made once,
// shown once, and stored only as its SHA-256 digest in a file the
// gateway's user alone may read, as E2B's own keys are. A key has an id
// (not secret) that its sandboxes are labelled with, so that one key never
// reaches another's sandboxes.
package keys

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
)

// Prefix starts every key: E2B's Python SDK refuses a key without it.
const Prefix = "e2b_"

// fileName is the keys' file in the gateway's state folder.
const fileName = "api-keys.json"

// Key is a stored key: what it is known by, never the key itself.
type Key struct {
	// ID names the key in listings and labels its sandboxes.
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Digest is the hex SHA-256 of the key.
	Digest string `json:"digest"`
}

// Store is the keys of one gateway state folder. `sandboxctl e2b key`
// changes the file under a running gateway, so every use looks at it: the
// keys read last are kept while the file's inode, size and mtime stay the
// same (a save renames a new file into place, a new inode), so a request
// costs a stat, and a revoked key is refused by the next one.
type Store struct {
	dir string
	mu  sync.Mutex
	// cached is the keys read last, valid while the file is still seen.
	cached []Key
	seen   fileStamp
	// reads counts the file's reads (tests).
	reads int
}

// fileStamp tells one version of the keys file from another.
type fileStamp struct {
	ok    bool
	ino   uint64
	size  int64
	mtime int64 // ns: comparable, unlike a time.Time's location
}

func stampOf(fi fs.FileInfo) fileStamp {
	st := fileStamp{ok: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// Open is the store of state folder dir, made (0700) if missing.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("e2b state folder: %w", err)
	}
	return &Store{dir: dir}, nil
}

func (s *Store) path() string { return filepath.Join(s.dir, fileName) }

// List is every key, oldest first.
func (s *Store) List() ([]Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load()
}

// load is the keys in the file, read again only when it changed. The
// caller holds mu and may not modify the slice in place.
func (s *Store) load() ([]Key, error) {
	f, err := os.Open(s.path())
	if errors.Is(err, fs.ErrNotExist) {
		s.cached, s.seen = nil, fileStamp{}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st := stampOf(fi)
	if st == s.seen {
		return s.cached, nil
	}
	s.reads++
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var ks []Key
	if err := json.Unmarshal(b, &ks); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path(), err)
	}
	s.cached, s.seen = slices.Clip(ks), st
	return s.cached, nil
}

// save writes the keys whole, through a temporary file renamed over the
// old one: a crash leaves one or the other, never half.
func (s *Store) save(ks []Key) error {
	b, err := json.MarshalIndent(ks, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, fileName+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := keepOwner(tmp, s.dir); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.path())
}

// keepOwner gives f the owner of folder dir when root writes into another
// user's folder: root's `sandboxctl e2b key create` in the packaged
// gateway's /var/lib/sandboxd-e2b must leave a file that the gateway's
// user (sandboxd-e2b) can still read.
func keepOwner(f *os.File, dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return nil
	}
	return f.Chown(int(st.Uid), int(st.Gid))
}

// Create makes a key named name and returns it: the only time it is seen.
func (s *Store) Create(name string) (string, Key, error) {
	if len(name) > 128 || strings.ContainsAny(name, "\x00\n") {
		return "", Key{}, errdefs.ErrInvalidArgument.WithMessage("a key's name is one line of at most 128 bytes")
	}
	secret := make([]byte, 20)
	id := make([]byte, 6)
	if _, err := rand.Read(secret); err != nil {
		return "", Key{}, err
	}
	if _, err := rand.Read(id); err != nil {
		return "", Key{}, err
	}
	key := Prefix + hex.EncodeToString(secret)
	k := Key{ID: hex.EncodeToString(id), Name: name, CreatedAt: time.Now().UTC().Truncate(time.Second), Digest: digest(key)}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks, err := s.load()
	if err != nil {
		return "", Key{}, err
	}
	if err := s.save(append(slices.Clip(ks), k)); err != nil {
		return "", Key{}, err
	}
	return key, k, nil
}

// Revoke removes the key with id (or name, if one key has it); its
// sandboxes stay, unreachable through the gateway until deleted.
func (s *Store) Revoke(idOrName string) (Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks, err := s.load()
	if err != nil {
		return Key{}, err
	}
	i := slices.IndexFunc(ks, func(k Key) bool { return k.ID == idOrName })
	if i < 0 {
		var named []int
		for j, k := range ks {
			if k.Name != "" && k.Name == idOrName {
				named = append(named, j)
			}
		}
		switch len(named) {
		case 0:
			return Key{}, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("no key %q: `sandboxctl e2b key ls` lists them", idOrName))
		case 1:
			i = named[0]
		default:
			return Key{}, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%d keys are named %q: give the id", len(named), idOrName))
		}
	}
	k := ks[i]
	return k, s.save(slices.Delete(slices.Clone(ks), i, i+1))
}

// Check finds the key of a request's X-API-KEY; ok is false for a key
// that is not one of the store's.
func (s *Store) Check(key string) (k Key, ok bool, err error) {
	if !strings.HasPrefix(key, Prefix) {
		return Key{}, false, nil
	}
	ks, err := s.List()
	if err != nil {
		return Key{}, false, err
	}
	d := []byte(digest(key))
	for _, k := range ks {
		if subtle.ConstantTimeCompare(d, []byte(k.Digest)) == 1 {
			return k, true, nil
		}
	}
	return Key{}, false, nil
}

func digest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
