package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Invocation timeouts, in seconds: an event's __timeout or --timeout, else
// the default. The maximum is the daemon's own default max.timeout_s, so a
// bound the command accepts is one a stock daemon accepts too.
const (
	invokeDefaultTimeout = 300
	invokeMaxTimeout     = 3600
)

// invokeTimeoutKey is the event key that sets the invocation's timeout, as
// local Lambda runners read it. The driver removes it before the handler
// sees the event: the event a handler gets is the one Lambda would give it.
const invokeTimeoutKey = "__timeout"

// readEvent takes the event from --event, --event-file ("-" is standard
// input) or, with neither, standard input when it is not a terminal: a
// pipe feeds it, an interactive shell does not block on it.
func readEvent(event string, eventSet bool, file string, stdin io.Reader, stdinTerminal bool) ([]byte, error) {
	switch {
	case eventSet && file != "":
		return nil, errors.New("give the event either with --event or with --event-file, not both")
	case eventSet:
		return []byte(event), nil
	case file == "-":
		return io.ReadAll(stdin)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("cannot read the event file %s: %w", file, errors.Unwrap(err))
		}
		return b, nil
	case !stdinTerminal:
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("cannot read the event from standard input: %w", err)
		}
		return b, nil
	}
	return nil, nil
}

// parseEvent checks that text is one JSON value and returns it with the
// timeout its __timeout asks for (0: none). Empty text is the empty
// object, so that an empty pipe (or /dev/null) invokes as no event does.
// The event goes to the handler as the text it was: numbers keep the
// precision Python gives them, keys their order.
func parseEvent(text []byte) (string, float64, error) {
	if len(bytes.TrimSpace(text)) == 0 {
		return "{}", 0, nil
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", 0, fmt.Errorf("the event is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", 0, errors.New("the event is not JSON: more follows the first value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return string(text), 0, nil
	}
	raw, ok := obj[invokeTimeoutKey]
	if !ok {
		return string(text), 0, nil
	}
	n, ok := raw.(json.Number)
	if !ok {
		return "", 0, fmt.Errorf("the event's %s must be a number of seconds, not %s", invokeTimeoutKey, jsonKind(raw))
	}
	s, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || s <= 0 || s > invokeMaxTimeout {
		return "", 0, fmt.Errorf("the event's %s must be above 0 and at most %d seconds, not %s", invokeTimeoutKey, invokeMaxTimeout, n)
	}
	return string(text), s, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

// invokeTimeout is the bound of one invocation in whole seconds (the
// sandbox's execution timeouts are whole seconds, so a fraction rounds
// up): --timeout wins over the event's __timeout, which wins over the
// default.
func invokeTimeout(flagSet bool, flag int, event float64) (int, error) {
	if flagSet {
		if flag <= 0 || flag > invokeMaxTimeout {
			return 0, fmt.Errorf("--timeout must be above 0 and at most %d seconds, not %d", invokeMaxTimeout, flag)
		}
		return flag, nil
	}
	if event > 0 {
		return int(math.Ceil(event)), nil
	}
	return invokeDefaultTimeout, nil
}

// invokeDefaultHandlers are the names looked up without --handler: the
// name Lambda's console gives a new Python function, then the short one.
var invokeDefaultHandlers = []string{"lambda_handler", "handler"}

var pythonName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// handlerNames are the names the driver looks the handler up by, in order.
// --handler takes Lambda's own "file.function" form too: the function is
// what follows the last dot (there is one file to look in).
func handlerNames(flag string) ([]string, error) {
	if flag == "" {
		return invokeDefaultHandlers, nil
	}
	name := flag
	if i := strings.LastIndexByte(flag, '.'); i >= 0 {
		name = flag[i+1:]
	}
	if !pythonName.MatchString(name) {
		return nil, fmt.Errorf("bad --handler %q: give a Python function name, e.g. lambda_handler", flag)
	}
	return []string{name}, nil
}
