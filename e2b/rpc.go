package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// envd's services (filesystem.Filesystem, process.Process) speak the
// Connect protocol with its JSON codec over HTTP/1.1, as the SDKs send
// it. connect-go serves them; the messages are plain Go structs with
// protobuf's JSON names (lowerCamelCase, enums by name, 64-bit integers
// as strings, oneof members as fields), so E2B's .proto files are not
// needed here.

// jsonCodec is Connect's "json" codec over encoding/json, in place of
// its protojson one, which takes only generated messages.
type jsonCodec struct{}

func (jsonCodec) Name() string                    { return "json" }
func (jsonCodec) Marshal(v any) ([]byte, error)   { return json.Marshal(v) }
func (jsonCodec) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// sessionKey carries the request's sandbox to its RPC's handler.
type sessionKey struct{}

func sessionOf(ctx context.Context) *api.Session {
	s, _ := ctx.Value(sessionKey{}).(*api.Session)
	return s
}

// rpcOptions are every RPC handler's.
var rpcOptions = []connect.HandlerOption{connect.WithCodec(jsonCodec{}), connect.WithReadMaxBytes(maxBody)}

// rpcHandler serves envd's RPCs for session s.
func (g *Gateway) rpcHandler(w http.ResponseWriter, r *http.Request, s *api.Session) error {
	g.rpc.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
	return nil
}

// rpcRoutes are envd's RPCs.
func (g *Gateway) rpcRoutes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, h := range append(g.filesystemRPCs(), g.processRPCs()...) {
		mux.Handle(h.path, h.h)
	}
	// An RPC sandboxd does not serve answers as Connect does: its body
	// says unimplemented, and why, which the SDKs show.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotImplemented, map[string]string{"code": "unimplemented",
			"message": r.URL.Path + " is not served by sandboxd's E2B gateway (docs/e2b.md lists what is)"})
	})
	return mux
}

// rpc is one procedure's handler.
type rpc struct {
	path string
	h    http.Handler
}

func unary[Req, Res any](path string, f func(context.Context, *Req) (*Res, error)) rpc {
	p, h := path, connect.NewUnaryHandlerSimple(path, func(ctx context.Context, req *Req) (*Res, error) {
		res, err := f(ctx, req)
		return res, rpcError(err)
	}, rpcOptions...)
	return rpc{p, h}
}

func serverStream[Req, Res any](path string, f func(context.Context, *Req, *connect.ServerStream[Res]) error) rpc {
	p, h := path, connect.NewServerStreamHandlerSimple(path, func(ctx context.Context, req *Req, st *connect.ServerStream[Res]) error {
		return rpcError(f(ctx, req, st))
	}, rpcOptions...)
	return rpc{p, h}
}

// rpcError is err with the Connect code of its class, as envd's: the SDKs
// turn not_found into NotFoundError, invalid_argument into
// InvalidArgumentError, and so on.
func rpcError(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	code := connect.CodeInternal
	switch {
	case errdefs.IsNotFound(err):
		code = connect.CodeNotFound
	case errdefs.IsInvalidArgument(err):
		code = connect.CodeInvalidArgument
	case errdefs.IsAlreadyExists(err), errdefs.IsConflict(err):
		code = connect.CodeAlreadyExists
	case errdefs.IsPermissionDenied(err):
		code = connect.CodePermissionDenied
	case errdefs.IsResourceExhausted(err):
		code = connect.CodeResourceExhausted
	case errdefs.IsUnavailable(err):
		code = connect.CodeUnavailable
	case errdefs.IsFailedPrecondition(err):
		code = connect.CodeFailedPrecondition
	case errdefs.IsCanceled(err), errors.Is(err, context.Canceled):
		code = connect.CodeCanceled
	case errdefs.IsDeadlineExceeded(err), errors.Is(err, context.DeadlineExceeded):
		code = connect.CodeDeadlineExceeded
	}
	return connect.NewError(code, errors.New(err.Error()))
}
