package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
)

// invokeDir is where the handler file lands in the sandbox: the working
// folder of the code, so that the handler imports what sits beside it as
// Lambda's task root lets it.
const invokeDir = "/workspace"

// invokeReportMark starts the line on which the driver reports how the
// invocation went. The handler's stdout goes to stderr, so stdout holds
// this line alone; the mark (a record separator first) still finds it
// should something else reach stdout.
const invokeReportMark = "\x1esandboxd-invoke "

// driverConfig is what the driver needs to know, handed to it as JSON.
type driverConfig struct {
	Path         string   `json:"path"`
	FunctionName string   `json:"function_name"`
	Handlers     []string `json:"handlers"`
	Event        string   `json:"event"`
	TimeoutS     int      `json:"timeout_s"`
	RequestID    string   `json:"request_id"`
	// MemoryMB is the sandbox's memory limit (0: unknown), which the
	// sandbox cannot read itself (see memoryLimit).
	MemoryMB  int64  `json:"memory_mb"`
	ARN       string `json:"arn"`
	LogGroup  string `json:"log_group"`
	LogStream string `json:"log_stream"`
	Profile   bool   `json:"profile"`
	Mark      string `json:"mark"`
}

// newDriverConfig fills in what a Lambda would call the function and this
// request; fileName is the handler's base name.
func newDriverConfig(fileName string, handlers []string, event string, timeoutS int, memoryMB int64, profile bool, now time.Time) driverConfig {
	name := strings.TrimSuffix(fileName, path.Ext(fileName))
	return driverConfig{
		Path: path.Join(invokeDir, fileName), FunctionName: name, Handlers: handlers, Event: event,
		TimeoutS: timeoutS, RequestID: newUUID(), MemoryMB: memoryMB, Profile: profile, Mark: invokeReportMark,
		// The account and region are the placeholders local Lambda
		// runners use: code that parses an ARN gets one that parses.
		ARN:       "arn:aws:lambda:us-east-1:000000000000:function:" + name,
		LogGroup:  "/aws/lambda/" + name,
		LogStream: now.UTC().Format("2006/01/02") + "/[$LATEST]" + randomHex(16),
	}
}

// newUUID is a random (version 4) UUID, as Lambda's request ids are.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// driverCode is the Python that runs the handler: the driver's source
// with its configuration. The configuration travels base64-encoded so that
// no event, however quoted, can end the literal it sits in.
func driverCode(cfg driverConfig) (string, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	// The call has a line of its own: a timeout's traceback shows it, and
	// should not show the configuration.
	return driverSource + fmt.Sprintf("\n_sandboxd_cfg = %q\n_sandboxd_invoke(__import__(\"json\").loads(__import__(\"base64\").b64decode(_sandboxd_cfg)))\n",
		base64.StdEncoding.EncodeToString(b)), nil
}

// driverSource compiles the handler file and looks the handler up before
// calling it, so that a syntax error or a missing handler (exit code 3)
// is told apart from an exception the code raised (1). Everything the
// handler writes, to sys.stdout or to fd 1 (child processes), goes to
// stderr; stdout carries the report alone. KeyboardInterrupt is never
// caught: it is the sandbox's timeout, which the execution's status tells.
const driverSource = `def _sandboxd_invoke(cfg):
    import json, os, sys, time, traceback, types

    start = time.monotonic()
    deadline = start + cfg["timeout_s"]
    path, name, handlers = cfg["path"], cfg["function_name"], cfg["handlers"]
    base = os.path.basename(path)

    def failure(e, tb):
        text = "".join(traceback.format_exception(type(e), e, tb))
        sys.stderr.write(text)
        return {"type": type(e).__name__, "message": str(e), "traceback": text}

    class LambdaContext:
        """What Lambda's Python runtime passes as context."""

        def __init__(self):
            self.function_name = name
            self.function_version = "$LATEST"
            self.invoked_function_arn = cfg["arn"]
            self.memory_limit_in_mb = str(cfg["memory_mb"] or "")
            self.aws_request_id = cfg["request_id"]
            self.log_group_name = cfg["log_group"]
            self.log_stream_name = cfg["log_stream"]
            self.identity = None
            self.client_context = None

        def get_remaining_time_in_millis(self):
            return max(0, int((deadline - time.monotonic()) * 1000))

        def __repr__(self):
            return "LambdaContext(%s)" % ", ".join("%s=%r" % kv for kv in sorted(vars(self).items()))

    def ms(t):
        return (time.monotonic() - t) * 1000.0

    def run():
        event = json.loads(cfg["event"])
        if isinstance(event, dict):
            event.pop("__timeout", None)
        ctx = LambdaContext()
        for k, v in (("AWS_LAMBDA_FUNCTION_NAME", name), ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
                     ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", ctx.memory_limit_in_mb),
                     ("AWS_LAMBDA_LOG_GROUP_NAME", ctx.log_group_name), ("AWS_LAMBDA_LOG_STREAM_NAME", ctx.log_stream_name),
                     ("LAMBDA_TASK_ROOT", os.path.dirname(path)), ("_HANDLER", name + "." + handlers[0])):
            os.environ.setdefault(k, v)
        with open(path, "rb") as f:
            src = f.read()
        t = time.monotonic()
        try:
            code = compile(src, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            err = failure(e, None)
            if isinstance(e, SyntaxError) and e.lineno:
                err["message"] = "%s (line %d)" % (e.msg, e.lineno)
            return {"outcome": "syntax", "error": err}
        mod = types.ModuleType(name)
        mod.__file__ = path
        # A file named as a module already loaded (json.py) must not
        # replace it for everything else.
        sys.modules.setdefault(name, mod)
        try:
            exec(code, mod.__dict__)
        except KeyboardInterrupt:
            raise
        except BaseException as e:
            return {"outcome": "raised", "error": failure(e, e.__traceback__.tb_next), "import_ms": ms(t)}
        import_ms = ms(t)
        found = [h for h in handlers if h in mod.__dict__]
        if not found:
            msg = "%s defines no %s" % (base, " and no ".join(handlers))
            return {"outcome": "undefined", "error": {"type": "HandlerNotFound", "message": msg, "traceback": ""}, "import_ms": import_ms}
        fn = mod.__dict__[found[0]]
        if not callable(fn):
            msg = "%s in %s is of type %s, not a function" % (found[0], base, type(fn).__name__)
            return {"outcome": "undefined", "error": {"type": "HandlerNotFound", "message": msg, "traceback": ""}, "import_ms": import_ms}
        prof = None
        if cfg["profile"]:
            import cProfile
            prof = cProfile.Profile()
        t = time.monotonic()
        try:
            try:
                result = prof.runcall(fn, event, ctx) if prof else fn(event, ctx)
            finally:
                handler_ms = ms(t)
                if prof:
                    import pstats
                    sys.stderr.write("\n--- profile: top 20 by cumulative time ---\n")
                    pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(20)
        except KeyboardInterrupt:
            raise
        except BaseException as e:
            return {"outcome": "raised", "error": failure(e, e.__traceback__.tb_next), "import_ms": import_ms, "handler_ms": handler_ms}
        rep = {"import_ms": import_ms, "handler_ms": handler_ms}
        try:
            rep["result"] = json.dumps(result, default=str)
        except Exception as e:
            rep.update(outcome="raised", error=failure(e, None))
            return rep
        rep["outcome"] = "ok"
        return rep

    sys.stdout.flush()
    real_stdout, saved = sys.stdout, os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        rep = run()
    finally:
        try:
            sys.stderr.flush()
        except Exception:
            pass
        os.dup2(saved, 1)
        os.close(saved)
        sys.stdout = real_stdout
    real_stdout.write("\n" + cfg["mark"] + json.dumps(rep) + "\n")
    real_stdout.flush()
`
