package mcpgateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sandboxd/sandboxd/api"
)

var errLineTooLong = errors.New("line too long")

// readLine reads one line (without its newline) of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err // a last line without its newline is not a request
		}
	}
}

// DecodeRequest reads one request line: an object with an op ("call",
// the default, or "list"); a call names a server and a tool, and its
// arguments, if any, are an object.
func DecodeRequest(line []byte) (*api.MCPRequest, error) {
	var req api.MCPRequest
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("a request is one JSON object a line: %v", err)
	}
	if dec.More() {
		return nil, errors.New("a request is one JSON object a line: more follows it")
	}
	switch req.Op {
	case "":
		req.Op = api.MCPOpCall
	case api.MCPOpCall, api.MCPOpList:
	default:
		return nil, fmt.Errorf("unknown op %q: use %q or %q", req.Op, api.MCPOpCall, api.MCPOpList)
	}
	if req.Op == api.MCPOpList {
		return &req, nil
	}
	if req.Server == "" || req.Tool == "" {
		return nil, errors.New("a call names its server and tool")
	}
	switch a := bytes.TrimSpace(req.Arguments); {
	case len(a) == 0 || bytes.Equal(a, []byte("null")):
		req.Arguments = nil
	case a[0] != '{':
		return nil, errors.New("a call's arguments are a JSON object")
	}
	if req.TimeoutS < 0 {
		return nil, errors.New("timeout_s is a number of seconds, 0 or more")
	}
	return &req, nil
}
