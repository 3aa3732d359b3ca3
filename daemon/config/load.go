package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// Load reads a TOML file over the defaults. Unknown keys are errors,
// with the line they are on, so a typo never passes silently.
func Load(path string) (Config, error) {
	c := Default()
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return c, fmt.Errorf("%s:%d: %s", path, perr.Position.Line, perr.Message)
		}
		// A value of the wrong type: `toml: line 3 (last key "k"): …`.
		if m := typeError.FindStringSubmatch(err.Error()); m != nil {
			return c, fmt.Errorf("%s:%s: %s: %s", path, m[1], m[2], m[3])
		}
		return c, fmt.Errorf("%s: %w", path, err)
	}
	c.UserNS.explicit = md.IsDefined("userns", "id_base")
	c.Network.explicit = md.IsDefined("network", "subnet")
	lines := keyLines(data)
	if und := md.Undecoded(); len(und) > 0 {
		return c, fmt.Errorf("%s:%d: unknown key %q", path, lines[und[0].String()], und[0].String())
	}
	if err := c.Validate(); err != nil {
		return c, placeErrors(path, lines, err)
	}
	return c, nil
}

var typeError = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

// placeErrors puts the file and line of the key each problem names first
// ("max_sessions must be above 0" → "FILE:12: max_sessions must ...");
// a problem with a value the file does not set names the file alone.
func placeErrors(path string, lines map[string]int, err error) error {
	var errs []error
	for _, e := range unjoin(err) {
		key, _, _ := strings.Cut(e.Error(), " ")
		key = strings.TrimSuffix(key, ":")
		if n, ok := lines[key]; ok {
			errs = append(errs, fmt.Errorf("%s:%d: %w", path, n, e))
		} else {
			errs = append(errs, fmt.Errorf("%s: %w", path, e))
		}
	}
	return errors.Join(errs...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// keyLines maps each key the TOML text sets ("max_sessions",
// "defaults.memory_mb") and each table ("userns") to its line, for error
// messages. The config's plain shape (tables of bare keys) is all it reads.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	table := ""
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "["):
			table = strings.Trim(strings.TrimSpace(strings.SplitN(line, "#", 2)[0]), "[] ")
			out[table] = i + 1
		case strings.Contains(line, "=") && !strings.HasPrefix(line, "#"):
			k := strings.Trim(strings.TrimSpace(strings.SplitN(line, "=", 2)[0]), `"'`)
			if table != "" {
				k = table + "." + k
			}
			if _, seen := out[k]; !seen {
				out[k] = i + 1
			}
		}
	}
	return out
}
