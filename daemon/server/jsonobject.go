package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// checkObject checks what encoding/json lets through silently: a body that
// is not an object (null decodes into a request of defaults) and a key
// given twice in one object (the last one would win unseen). In an object
// that is a request's own (the top level, an entry of files), keys match
// fields without regard to case, as encoding/json matches them, so "Code"
// and "code" are the same key there; in maps (env, labels) they are not.
// body is valid JSON already: decode checked it. It returns the top-level
// keys whose value is not null, for requireFields: the one walk over the
// body serves both.
func checkObject(body []byte) (present []string, err error) {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, errdefs.ErrInvalidArgument.WithMessage("the request body must be a JSON object")
	}
	w := walker{dec: json.NewDecoder(bytes.NewReader(body))}
	w.dec.UseNumber()
	if _, err := w.value("", true); err != nil {
		return nil, err
	}
	return w.present, nil
}

// walker reads a body's tokens once, noting its top-level keys that are
// not null.
type walker struct {
	dec     *json.Decoder
	present []string
}

// value reads one value's tokens and says whether it is null; fields says
// whether an object there holds a struct's fields. path names where it
// is, for the message.
func (w *walker) value(path string, fields bool) (null bool, err error) {
	tok, err := w.dec.Token()
	if err != nil {
		return false, badJSON(err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for w.dec.More() {
			k, err := w.dec.Token()
			if err != nil {
				return false, badJSON(err)
			}
			key, _ := k.(string)
			norm := key
			if fields {
				norm = strings.ToLower(key)
			}
			if seen[norm] {
				return false, api.Errorf(errdefs.ErrInvalidArgument, "the key %s is given twice in %s: give it once", api.Quote(key), where(path))
			}
			seen[norm] = true
			// Below a request's fields only maps (env, labels) and
			// lists of objects (files) are nested.
			null, err := w.value(join(path, key), fields && path == "" && !isMap(key))
			if err != nil {
				return false, err
			}
			if path == "" && !null {
				w.present = append(w.present, key)
			}
		}
	case json.Delim('['):
		for w.dec.More() {
			if _, err := w.value(path+"[]", true); err != nil {
				return false, err
			}
		}
	default:
		return tok == nil, nil
	}
	_, err = w.dec.Token() // the closing delimiter
	return false, badJSON(err)
}

// isMap names the request fields that are maps of the caller's keys.
func isMap(key string) bool {
	switch strings.ToLower(key) {
	case "env", "labels":
		return true
	}
	return false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func where(path string) string {
	if path == "" {
		return "the request body"
	}
	return api.Quote(path)
}

func badJSON(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return api.Errorf(errdefs.ErrInvalidArgument, "bad JSON in the request body: %v", err)
}
