// sandboxd: the JavaScript SDK of sandboxd, code sandboxes over its Unix
// socket, for Node 18 and later, with no dependencies.
//
//     import { Sandbox, run } from "sandboxd";
//
//     await using sbx = await Sandbox.create({ memoryMb: 256, labels: { agent: "a1" } });
//     (await sbx.runCode("x = 6 * 7\nx")).result;          // "42"
//     (await sbx.commands.run("ls -la")).stdout;
//     await sbx.files.write("data.csv", "a,b\n1,2\n");
//     await sbx.files.uploadDir("./project");            // a folder, as /workspace/project
//     const p = await sbx.processes.start(["python3", "-m", "http.server"]);   // in the background
//     (await sbx.commands.runWithInput(["wc", "-c"], "abc")).stdout;          // "3\n"
//     console.log((await run("print(1)")).stdout);
//
// The daemon's socket is $SANDBOXD_SOCKET, else /run/sandboxd/sandboxd.sock.
// Failed calls throw the SandboxdError subclass of the contract's error
// code; executions that fail, time out or are killed are not errors but
// Executions whose `status` says so. See README.md.
//
// Every public name is exported from here: a module added to the SDK
// exports its names here too.

export { Attached } from "./attach.js";
export { Client, DEFAULT_FOLLOW_MS, DEFAULT_POLL_MS, DEFAULT_REQUEST_TIMEOUT_MS } from "./client.js";
export { Commands } from "./commands.js";
export { Contexts } from "./contexts.js";
export {
  BadGateway,
  Conflict,
  Internal,
  InvalidArgument,
  NotFound,
  PayloadTooLarge,
  PermissionDenied,
  ProtocolError,
  RequestTimeout,
  ResourceExhausted,
  SandboxdError,
  Unavailable,
  errorFromAnswer,
} from "./errors.js";
export { Files } from "./files.js";
export {
  CodeContext,
  DataDirHealth,
  ErrorDetail,
  ExecMetrics,
  Execution,
  ExecutionError,
  ExecutionSummary,
  FileEvent,
  FileInfo,
  FileStat,
  FileWritten,
  Health,
  HealthCheck,
  Limits,
  Output,
  Process,
  ProcessChunk,
  ProcessLogs,
  Session,
  Snapshot,
  Stats,
  Volume,
  VolumeMount,
  STATUS_ERROR,
  STATUS_INTERRUPTED,
  STATUS_KILLED,
  STATUS_LOST,
  STATUS_OK,
  STATUS_RUNNING,
  STATUS_TIMEOUT,
} from "./models.js";
export { run } from "./oneshot.js";
export { Processes } from "./processes.js";
export { Sandbox } from "./sandbox.js";
export { DEFAULT_SOCKET, SOCKET_ENV, VERSION } from "./transport.js";
export {
  DEFAULT_MAX_CHARS,
  TOOL_NAMES,
  TOOLS_VERSION,
  ToolResult,
  Toolbox,
  anthropicTools,
  definitions,
  dispatch,
  openaiResponsesTools,
  openaiTools,
} from "./tools.js";
