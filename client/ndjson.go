package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sandboxd/sandboxd/api"
)

// eachLine reads a streamed (NDJSON) answer: each line is a T, or the
// error line (type "error") that ends the stream early. It returns fn's
// error when fn fails, the error line's, ctx's when ctx ended, the
// connection's when it broke, and nil at the stream's end. what names the
// lines in an error.
func eachLine[T any](ctx context.Context, c *Client, resp *http.Response, what string, fn func(T) error) error {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	for sc.Scan() {
		var end struct {
			Type  string           `json:"type"`
			Error *api.ErrorDetail `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &end); err != nil {
			return fmt.Errorf("bad %s line from sandboxd: %w", what, err)
		}
		if end.Type == api.EventError {
			return streamError(resp, end.Error)
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return fmt.Errorf("bad %s line from sandboxd: %w", what, err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sc.Err(); err != nil {
		return c.connError(err)
	}
	return nil
}
