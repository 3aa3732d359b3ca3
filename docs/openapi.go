// Package docs owns the documents of the API that code serves or tests:
// the OpenAPI description, kept next to API.md so that the two are edited
// together.
package docs

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"go.yaml.in/yaml/v3"
)

// OpenAPIYAML is docs/openapi.yaml as written: the description of every
// endpoint, body and answer the daemon serves.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// OpenAPIJSON is OpenAPIYAML as JSON, the form tools fetch, converted on
// first use: YAML is for the people who edit it, and anchors and merge
// keys there come out expanded here.
var OpenAPIJSON = sync.OnceValues(func() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(OpenAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	v, err := jsonValue(doc)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	return json.Marshal(v)
})

// jsonValue makes a decoded YAML value one that encoding/json takes: YAML
// allows mapping keys of any kind, JSON only strings, and a key that is
// not one (an unquoted status code) is a mistake in the file, not a key
// to guess the spelling of.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			je, err := jsonValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			v[k] = je
		}
		return v, nil
	case map[any]any:
		for k := range v {
			return nil, fmt.Errorf("the key %v is not a string: quote it", k)
		}
		return map[string]any{}, nil
	case []any:
		for i, e := range v {
			je, err := jsonValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			v[i] = je
		}
		return v, nil
	}
	return v, nil
}
