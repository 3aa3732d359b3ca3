// Package mcptest is an MCP server built with the official Go SDK, for
// the tests of the MCP gateway: tools that answer, fail, hang and answer
// too much.
package mcptest

import (
	"context"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type (
	textIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	textOut struct {
		Text string `json:"text"`
	}
	addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	sumOut struct {
		Sum int `json:"sum"`
	}
	sizeIn struct {
		N int `json:"n" jsonschema:"how many bytes of text to answer"`
	}
	pidOut struct {
		PID int `json:"pid"`
	}
	none struct{}
)

// New is the server. Its tools: echo, add, secret (which a gateway is
// meant not to allow), hang (never answers), big (n bytes of text), fail
// (answers with isError) and pid (the server's process id).
func New() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sandboxd-test-tools", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, textOut, error) {
			return nil, textOut{Text: in.Text}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, sumOut, error) {
			return nil, sumOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "secret", Description: "What no sandbox may read."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, textOut, error) {
			return nil, textOut{Text: "the host's secret"}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			select {} // not even on cancellation: a server that hung
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answer n bytes of text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in sizeIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.N)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the tool failed on purpose"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server's process id."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, pidOut, error) {
			return nil, pidOut{PID: os.Getpid()}, nil
		})
	return s
}
