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
// body is valid JSON already: decode checked it.
func checkObject(body []byte) error {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errdefs.ErrInvalidArgument.WithMessage("the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return walkValue(dec, "", true)
}

// walkValue reads one value's tokens; fields says whether an object there
// holds a struct's fields. path names where it is, for the message.
func walkValue(dec *json.Decoder, path string, fields bool) error {
	tok, err := dec.Token()
	if err != nil {
		return badJSON(err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return badJSON(err)
			}
			key, _ := k.(string)
			norm := key
			if fields {
				norm = strings.ToLower(key)
			}
			if seen[norm] {
				return api.Errorf(errdefs.ErrInvalidArgument, "the key %s is given twice in %s: give it once", api.Quote(key), where(path))
			}
			seen[norm] = true
			// Below a request's fields only maps (env, labels) and
			// lists of objects (files) are nested.
			if err := walkValue(dec, join(path, key), fields && path == "" && !isMap(key)); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if err := walkValue(dec, path+"[]", true); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.Token() // the closing delimiter
	return badJSON(err)
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
