package e2b

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/containerd/errdefs"
)

// Signed file URLs: the SDKs' uploadUrl and downloadUrl hand out
// GET/POST /files URLs that carry no access token but a signature of it,
// so that a program without the token (curl, another server) can move
// one file. envd computes it as
//
//	"v1_" + base64(sha256(path ":" operation ":" username ":" token [":" expiration]))
//
// unpadded, operation "read" (GET) or "write" (POST), username the URL's
// (empty when it has none) and expiration, when the URL has one, Unix
// seconds after which it is refused. envd answers a wrong or expired
// signature 401, {code, message}.

// signature is envd's signature of a file operation on sandbox.
func (id Identity) signature(sandbox, path, operation, user, expiration string) string {
	raw := path + ":" + operation + ":" + user + ":" + id.accessToken(sandbox)
	if expiration != "" {
		raw += ":" + expiration
	}
	sum := sha256.Sum256([]byte(raw))
	return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// signedOperation is the operation a signed request's method does.
func signedOperation(method string) string {
	if method == http.MethodPost {
		return "write"
	}
	return "read"
}

// signs reports whether q's signature is sandbox's for a request of method
// (its expiration not checked).
func (id Identity) signs(sandbox, method string, q url.Values) bool {
	exp := q.Get("signature_expiration")
	if n, err := strconv.ParseInt(exp, 10, 64); err == nil {
		exp = strconv.FormatInt(n, 10) // envd signs the number, not its spelling
	}
	want := id.signature(sandbox, q.Get("path"), signedOperation(method), q.Get("username"), exp)
	return same(q.Get("signature"), want)
}

// checkSignature checks a request for sandbox's /files that came without
// the access token: its signature must be the sandbox's and, when it has
// an expiration, not past it at now.
func (id Identity) checkSignature(sandbox string, r *http.Request, now time.Time) error {
	q := r.URL.Query()
	if q.Get("signature") == "" {
		return errorf(http.StatusUnauthorized, "the sandbox's access token is missing or wrong, and the request has no signature")
	}
	exp := q.Get("signature_expiration")
	var until int64
	if exp != "" {
		var err error
		if until, err = strconv.ParseInt(exp, 10, 64); err != nil {
			return errdefs.ErrInvalidArgument.WithMessage("bad signature_expiration " + strconv.Quote(exp) + ": give Unix seconds")
		}
	}
	if !id.signs(sandbox, r.Method, q) {
		return errorf(http.StatusUnauthorized, "invalid signature")
	}
	if exp != "" && until < now.Unix() {
		return errorf(http.StatusUnauthorized, "signature is already expired")
	}
	return nil
}

// isSignable reports whether a request is one a signature may authorize:
// envd's GET or POST /files.
func isSignable(port int, r *http.Request) bool {
	return port == portEnvd && r.URL.Path == "/files" && (r.Method == http.MethodGet || r.Method == http.MethodPost)
}

// signedSandbox is the sandbox whose token signs r, a signed request with
// no E2b-Sandbox-Id: E2B's URL names the sandbox in its host
// (49983-<id>.<domain>), which a gateway reached by E2B_SANDBOX_URL does
// not have, so the signature names it: the one of this gateway's
// sandboxes whose token made it.
func (g *Gateway) signedSandbox(r *http.Request) (string, error) {
	q := r.URL.Query()
	all, err := g.o.Daemon.ListSessions(r.Context(), map[string]string{labelGateway: g.o.ID.ID})
	if err != nil {
		return "", err
	}
	for _, s := range all {
		if g.o.ID.signs(s.ID, r.Method, q) {
			return s.ID, nil
		}
	}
	return "", errorf(http.StatusUnauthorized, "invalid signature: no sandbox of this gateway signed it")
}
