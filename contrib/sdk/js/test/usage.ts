// A typed use of the SDK, as a TypeScript caller writes it: test/types.test.js
// type-checks it (strict) against index.d.ts, through the package's own
// "exports", as an installed package is seen. It is compiled, never run.

import { ToolMessage } from "@langchain/core/messages";
import type { StructuredToolInterface } from "@langchain/core/tools";
import {
  Attached,
  Client,
  CodeContext,
  Conflict,
  ExecMetrics,
  Execution,
  ExecutionSummary,
  FileInfo,
  FileWritten,
  Health,
  NotFound,
  Output,
  Process,
  ProcessChunk,
  ProcessLogs,
  ResourceExhausted,
  Sandbox,
  SandboxdError,
  Session,
  Snapshot,
  Volume,
  VolumeMount,
  Stats,
  ToolResult,
  Toolbox,
  anthropicTools,
  definitions,
  dispatch,
  openaiResponsesTools,
  openaiTools,
  run,
  RequestTimeout,
  STATUS_RUNNING,
  TOOL_NAMES,
  type AnthropicToolResult,
  type AttachChunk,
  type CreateVolumeOptions,
  type CommandOutput,
  type ExecOptions,
  type FollowOptions,
  type OpenAIToolMessage,
  type OutputOptions,
  type SessionFields,
  type SnapshotSessionFields,
  type StartProcessOptions,
  type SubmitOptions,
  type ToolName,
  type UndoOptions,
  type UpdateVolumeOptions,
  type VolumeMountOptions,
  type WaitOptions,
} from "sandboxd";
import { SandboxdTool, langchainTools } from "sandboxd/langchain";

export async function example(signal: AbortSignal): Promise<string> {
  await using sbx = await Sandbox.create({
    template: "python",
    memoryMb: 256,
    cpus: 1,
    pids: 64,
    diskMb: 512,
    timeoutS: 30,
    idleTimeoutS: 600,
    network: "allowlist",
    allow: ["pypi.org", "*.github.com:443"],
    egressKbps: 1000,
    maxConnections: 10,
    env: { A: "1" },
    labels: { agent: "a1" },
    runtime: "runc",
    mcpServers: ["github"],
    idleAction: "pause",
    deadlineS: 3600,
    requestTimeoutMs: 10_000,
    signal,
  });
  const id: string = sbx.id;
  const r: Execution = await sbx.runCode("x = 6 * 7\nx", { timeoutS: 5, env: { B: "2" }, cwd: "sub" });
  const result: string | null = r.result;
  const exitCode: number = r.exitCode;
  if (r.error) {
    const tb: string = r.error.traceback;
    console.log(r.error.name, r.error.value, tb);
  }
  for (const o of r.outputs) {
    const png: Buffer | null = o.png;
    const html: string | null = o.html;
    console.log(o.mime, png?.length, html);
    const bundle: Record<string, string> = o.bundle;
    const md: string | null = o.markdown;
    const svg: string | null = o.svg;
    const jpeg: Buffer | null = o.jpeg;
    const plain: string | null = o.text;
    const parsed: unknown = o.json;
    console.log(bundle["text/plain"], md, svg, jpeg?.length, plain, parsed);
  }
  const shown: Output[] = [];
  await sbx.runCode("display(1)", { onDisplay: (o: Output) => void shown.push(o) });
  await sbx.runCode("display(2)", {
    onDisplay: async (o: Output) => {
      await Promise.resolve(o.html);
    },
  });
  await sbx.runCode("for i in range(3): print(i)", {
    onStdout: (s: string) => process.stdout.write(s),
    onStderr: async (s: string) => {
      await Promise.resolve(s);
    },
  });
  const c = await sbx.commands.run("ls -la", { cwd: "/tmp", requestTimeoutMs: null });
  console.log(c.exitCode, c.stdout, c.stderr, c.ok, c.status === "timeout");

  await sbx.files.write("data.csv", "a,b\n1,2\n");
  await sbx.files.write("note.md", "# hi", { metadata: { author: "me" } });
  const meta: Record<string, string> = (await sbx.files.stat("note.md")).metadata;
  const perms: string[] = (await sbx.files.list(".")).map((f: FileInfo) => f.permissions + Object.keys(f.metadata).join(","));
  const ctx: CodeContext = await sbx.contexts.create({ from: "default", cwd: "sub" });
  await sbx.runCode("x", { context: ctx });
  await sbx.commands.run("pwd", { context: ctx.id });
  const ctxIds: string[] = (await sbx.contexts.list()).map((c) => c.id);
  const restarted: CodeContext = await sbx.contexts.restart(ctx);
  await sbx.contexts.delete(restarted);
  await sbx.client.createContext(sbx.id, { language: "shell" });
  console.log(meta, perms, ctxIds);
  const vol: Volume = await sbx.client.createVolume("data", 32);
  const volOpts: CreateVolumeOptions = { sizeMb: 64, signal };
  await sbx.client.createVolume("more", volOpts);
  const mounts: VolumeMountOptions[] = [{ name: vol.name, path: "/data" }, new VolumeMount({ name: "more", path: "/mnt/v", readOnly: true })];
  await using withVolumes = await Sandbox.create({ volumes: mounts });
  const mounted: VolumeMount[] = withVolumes.session.volumes;
  const used: number[] = (await sbx.client.volumes()).map((v: Volume) => v.usedMb + v.sizeMb);
  const by: string[] = (await sbx.client.volume(vol)).mountedBy;
  const share: UpdateVolumeOptions = { sharedWith: [1001], signal };
  const shared: number[] = (await sbx.client.updateVolume(vol, share)).sharedWith;
  await sbx.client.updateVolume("data", { sharedWith: [] });
  console.log(shared);
  await sbx.client.deleteVolume("more", { requestTimeoutMs: 1000 });
  console.log(mounted.map((m) => m.readOnly), used, by);
  const snap: Snapshot = await sbx.createSnapshot({ name: "base", signal });
  await sbx.client.createSnapshot(sbx.id);
  await using fromSnap = await Sandbox.create({ snapshot: snap, labels: { copy: "1" } });
  const extra: SnapshotSessionFields = { env: { A: "1" }, deadlineS: 60 };
  const fromMany: Sandbox[] = await Sandbox.fromSnapshot("base", { count: 2, ...extra });
  const forks: Sandbox[] = await fromSnap.fork({ count: 2, requestTimeoutMs: 5000 });
  const forked: Session[] = await sbx.client.forkSession(sbx.id);
  const many: Session[] = await sbx.client.createSessions(snap, { count: 3, name: undefined });
  const snaps: Snapshot[] = await sbx.client.snapshots();
  const sizes: number[] = snaps.map((s) => s.sizeMb);
  const memory: boolean = (await sbx.client.snapshot(snap)).memory;
  await sbx.client.deleteSnapshot("base");
  for (const s of [...fromMany, ...forks]) await s.kill();
  await using undoable = await Sandbox.create({ checkpoints: 3 });
  const kept: number = undoable.session.checkpoints;
  const undone: number = (await undoable.undo()) + (await undoable.undo(2, { signal })) + (await undoable.undo({ steps: 1 }));
  const undoOpts: UndoOptions = { steps: 2, requestTimeoutMs: 5000 };
  const undone2: number = (await sbx.client.undo(undoable.id)) + (await sbx.client.undo(undoable.id, 2)) + (await sbx.client.undo(undoable.id, undoOpts));
  console.log(kept, undone, undone2);
  console.log(forked.length, many.length, sizes, memory, snap.sessionId, snap.createdAt);
  await sbx.files.write("data.bin", new Uint8Array([0, 1]));
  const bytes: Buffer = await sbx.files.read("data.bin");
  const text: string = await sbx.files.read("data.csv", "utf8");
  const text2: string = await sbx.files.read("data.csv", { encoding: "utf8", signal });
  const text3: string = await sbx.files.readText("data.csv");
  const entries: FileInfo[] = await sbx.files.list(".");
  const there: boolean = await sbx.files.exists("data.csv");
  await sbx.files.remove("data.csv");
  console.log(bytes.length, text, text2, text3, entries.map((e) => [e.name, e.isDir, e.modifiedAt]), there);

  const inst: Execution = await sbx.install(["numpy==1.26.4"], { indexUrl: "https://pypi.org/simple" });
  await sbx.install("rich");
  const info: Session = await sbx.info();
  const stats: Stats = await sbx.stats();
  console.log(inst.status, info.limits.memoryMb, info.createdAt?.toISOString(), stats.memoryBytes);
  await sbx.stop();
  await sbx.start();
  await sbx.restart();
  const interrupted: boolean = await sbx.interrupt({ signal });
  const paused: Session = await sbx.pause();
  const resumed: Session = await sbx.resume({ requestTimeoutMs: 1000 });
  const idleAction: string = paused.idleAction;
  if (resumed.status === "paused" || resumed.status === "running") console.log(interrupted, idleAction);
  await sbx.setNetwork("none");
  const deadline: Date | null = (await sbx.setDeadline(600)).deadline;
  console.log(deadline?.toISOString(), (await new Client().updateSession(id, { deadlineS: 0 })).deadline);
  const hist: ExecutionSummary[] = await sbx.executions({ limit: 10 });
  const exit: number | null = hist[0].exitCode;
  console.log(hist.length, exit, hist[0].ok, hist[0].codeSha256, await sbx.isRunning());
  // @ts-expect-error a summary has no output
  console.log(hist[0].stdout);

  const eid: string = await sbx.submit("import time; time.sleep(5)", { timeoutS: 10, env: { A: "1" }, cwd: "sub", signal });
  const sub: SubmitOptions = { language: "shell", timeoutS: 1 };
  const eid2: string = await sbx.commands.submit("make", { cwd: "p" });
  // @ts-expect-error a submitted execution streams nothing: its output is asked for
  await sbx.submit("1", { onStdout: (s: string) => console.log(s) });
  const now: Execution = await sbx.execution(eid, { signal });
  if (now.status === STATUS_RUNNING) console.log(now.stdout);
  const wait: WaitOptions = { timeoutMs: 60_000, pollMs: 100, signal };
  try {
    const done: Execution = await sbx.waitExecution(eid2, wait);
    const m: ExecMetrics | null = done.metrics;
    const uid: number | null = done.callerUid;
    console.log(m?.cpuMs, m?.memoryPeakBytes, m?.wallMs, uid, done.codeSha256, sub);
  } catch (e) {
    if (!(e instanceof RequestTimeout)) throw e;
  }
  await sbx.waitExecution(eid);

  // Background processes.
  const p: Process = await sbx.processes.start(["python3", "-m", "http.server"], { env: { A: "1" }, cwd: "site", signal });
  await sbx.processes.start("echo hi && sleep 1");
  const procs: Process[] = await sbx.processes.list();
  console.log(procs.map((x) => [x.pid, x.ppid, x.command, x.startedAt, x.cpuSeconds, x.rssBytes, x.detached, x.exitCode]));
  const lg: ProcessLogs = await sbx.processes.logs(p.pid, { offset: 0 });
  const more: ProcessLogs = await sbx.processes.logs(p.pid, { offset: lg.nextOffset });
  console.log(lg.data.length, lg.running, lg.exitCode, lg.text, more.offset);
  const follow: FollowOptions = { offset: 0, pollMs: 100, timeoutMs: 60_000, signal };
  for await (const chunk of sbx.processes.follow(p.pid, follow)) {
    const b: Buffer = chunk;
    console.log(b.length);
  }
  const code: number | null = await sbx.processes.wait(p.pid, { timeoutMs: 1000 });
  const sent: boolean = await sbx.processes.kill(p.pid, "KILL");
  await sbx.processes.kill(p.pid);
  await sbx.processes.kill(p.pid, 9, { signal });
  console.log(code, sent);
  // @ts-expect-error the client's argv is an array: no shell
  await sbx.client.startProcess(sbx.id, "ls");

  // Attached processes.
  const start: StartProcessOptions = { stdin: true, tty: { rows: 24, cols: 80 }, tag: "repl", timeoutS: 60, env: { A: "1" } };
  const ap: Process = await sbx.processes.start(["python3", "-i"], start);
  await sbx.processes.writeStdin(ap.pid, "print(1)\n");
  await sbx.processes.writeStdin(ap.pid, Buffer.from("x"), { eof: true, signal });
  await sbx.processes.closeStdin(ap.pid);
  await sbx.processes.resize(ap.pid, 40, 120);
  await sbx.processes.signal(ap.pid, "INT");
  await sbx.processes.signal(ap.pid);
  const from: OutputOptions = { from: "now", follow: false };
  for await (const c of sbx.processes.output(ap.pid, { from: 0 })) {
    const piece: ProcessChunk = c;
    console.log(piece.stream, piece.data.length, piece.offset, piece.exitCode, piece.ended, piece.text, piece.nextOffset, piece.lost);
  }
  const it: AsyncGenerator<ProcessChunk, number | null, undefined> = sbx.client.processOutput(sbx.id, ap.pid, from);
  console.log(it);
  await sbx.client.writeStdin(sbx.id, ap.pid, "x", { eof: true });
  await sbx.client.closeStdin(sbx.id, ap.pid);
  await sbx.client.resizeProcess(sbx.id, ap.pid, 24, 80);
  await sbx.client.sendSignal(sbx.id, ap.pid, 9);
  // @ts-expect-error a terminal is {rows, cols}
  await sbx.processes.start(["sh"], { tty: true });
  // @ts-expect-error from is "start", "now" or a byte offset
  sbx.processes.output(ap.pid, { from: "end" });

  // Folders as tar.
  const up: FileWritten = await sbx.files.uploadDir("./project", "dest", { signal });
  await sbx.files.uploadDir("./project");
  const paths: string[] = await sbx.files.downloadDir("project", "./out");
  console.log(up.files, up.size, paths.length);

  // Attach.
  const fed: CommandOutput = await sbx.commands.runWithInput(["wc", "-c"], Buffer.from("abc"), { timeoutMs: 10_000 });
  const fed2: CommandOutput = await sbx.commands.runWithInput("sort", "b\na\n", { env: { LC_ALL: "C" }, cwd: "/tmp" });
  console.log(fed.exitCode, fed.stdout.length, fed.stderr.toString(), fed2.stdout);
  const a: Attached = await sbx.attach(["python3", "-i"], { tty: true, rows: 24, cols: 80, signal });
  await a.write("print(1)\n");
  await a.write(new Uint8Array([10]));
  await a.resize(50, 132);
  await a.closeStdin();
  for await (const chunk of a) {
    const c: AttachChunk = chunk;
    if (c.stream === "stderr") console.log(c.data.length);
  }
  const status: number = await a.wait();
  const known: number | null = a.exitCode;
  a.close();
  console.log(status, known, a.requestId);

  const same = await Sandbox.connect(id, { socket: "/run/sandboxd/sandboxd.sock" });
  const made: boolean = same.created;
  const keyed = await Sandbox.create({ idempotencyKey: "task-1", memoryMb: 128 });
  console.log(made, keyed.created);
  const killed: boolean = await same.kill();
  const list: Session[] = await Sandbox.list({ label: "agent=a1", labels: { team: "x" } });
  console.log(killed, list.length);

  // @ts-expect-error a field the contract does not have
  await Sandbox.create({ memroyMb: 256 });
  // @ts-expect-error memoryMb is a number
  await Sandbox.create({ memoryMb: "256" });
  // @ts-expect-error read without an encoding is bytes
  const notText: string = await sbx.files.read("data.bin");
  console.log(notText);

  const fields: SessionFields = { memoryMb: 128 };
  const opts: ExecOptions = { language: "shell", timeoutS: 1 };
  const one: Execution = await run("print(1)", { ...fields, files: { "in.txt": "hi" }, timeoutS: 1.5, language: "python" });
  console.log(one.stdout, opts);

  const client = new Client({ socket: "/run/sandboxd/sandboxd.sock", requestTimeoutMs: null });
  const s: Session = await client.createSession({ labels: { low: "level" }, idleAction: "stop", idempotencyKey: "k" });
  const once: { session: Session; created: boolean } = await client.createSessionOnce("k", { labels: { low: "level" } });
  console.log(once.session.id === s.id, once.created);
  const eid3: string = await client.startExec(s.id, "1", { language: "python" });
  const ran: Execution = await client.waitExecution(s.id, eid3, { pollMs: 50 });
  const one1: Execution = await client.execution(s.id, eid3);
  const sums: ExecutionSummary[] = await client.executions(s.id, { limit: 1 });
  console.log(ran.status, one1.status, sums.length);
  const drained: Record<string, any> = await client.drain();
  console.log(drained.state, (await client.drain(false, { signal })).state);
  const stopped: boolean = await client.interrupt(s.id, { requestTimeoutMs: 1000 });
  console.log(stopped, (await client.pauseSession(s.id)).status, (await client.resumeSession(s.id, { signal })).status);
  const got: Buffer | FileInfo[] = await client.getFile(s.id, "a.txt");
  console.log(got, await client.health(), (await client.info()).api_version, await client.node({ signal }));
  const h: Health = await client.healthStatus({ requestTimeoutMs: 1000 });
  if (!h.ok) console.log(h.status, h.reasons, h.checks.database?.ok, h.checks.database?.detail, h.dataDir?.freeMb, h.error?.message);
  const bg: Process = await client.startProcess(s.id, ["sleep", "1"], { cwd: "/tmp" });
  const all: Process[] = await client.processes(s.id);
  await client.signalProcess(s.id, bg.pid, "TERM", { signal });
  const logs: ProcessLogs = await client.processLogs(s.id, bg.pid, { offset: 0 });
  const gen = client.followProcess(s.id, bg.pid, { pollMs: 50 });
  const first = await gen.next();
  const exited: number | null | undefined = first.done ? first.value : undefined;
  console.log(all.length, logs.running, exited);
  const tar = await client.getTar(s.id, "project");
  const put: FileWritten = await client.putTar(s.id, "copy", tar);
  const att: Attached = await client.attach(s.id, ["cat"], { env: { A: "1" } });
  att.close();
  console.log(put.files);
  await client.deleteSession(s.id);

  try {
    await Sandbox.connect("nosuchsession");
  } catch (e) {
    if (e instanceof NotFound || e instanceof Conflict) {
      const code: string = e.code;
      const status: number | null = e.status;
      const req: string | null = e.requestId;
      console.log(code, status, req, e.message);
    } else if (e instanceof ResourceExhausted) {
      console.log(e.retryAfter ?? 1);
    } else if (e instanceof SandboxdError) {
      throw e;
    }
  }
  return result ?? String(exitCode);
}

export async function agentTools(sbx: Sandbox): Promise<number> {
  const names: readonly ToolName[] = TOOL_NAMES;
  const chat = openaiTools({ names: ["run_python", "read_file"] });
  const flat = openaiResponsesTools();
  const claude = anthropicTools({ names: "run_shell" });
  const defs = definitions();
  console.log(names, chat[0].function.parameters.required, flat[0].parameters, claude[0].input_schema, defs[0].description);
  // @ts-expect-error not a tool
  openaiTools({ names: ["browse"] });

  await using tb = new Toolbox({ memoryMb: 512, labels: { agent: "a1" }, idempotencyKey: "tb-1" }, { maxChars: 4000, timeoutS: 30 });
  const msg: OpenAIToolMessage = await tb.handleOpenAI({ id: "call_1", function: { name: "run_python", arguments: '{"code": "1"}' } });
  const block: AnthropicToolResult = await tb.handleAnthropic({ id: "toolu_1", name: "run_shell", input: { command: "ls" } });
  const out = await tb.handleOpenAIResponses({ call_id: "call_2", name: "read_file", arguments: '{"path": "a.txt"}' });
  const r: ToolResult = await tb.handle({ type: "tool_use", id: "toolu_2", name: "run_python", input: { code: "1" } });
  const fig = r.openaiImagesMessage();
  console.log(msg.content, block.is_error, out.output, r.data, r.isError, r.errorCode, r.images[0]?.png, fig?.content);
  const sandbox: Sandbox | null = tb.sandbox;
  console.log(sandbox?.id, (await tb.getSandbox()).id);

  const mine = new Toolbox(sbx, { names: ["run_python", "run_shell"], indexUrl: "http://index/simple" });
  const d: ToolResult = await dispatch(sbx, "run_shell", { command: "ls" }, { maxChars: 2000 });
  await mine.close();
  // @ts-expect-error a field the contract does not have
  new Toolbox({ memroyMb: 256 });

  const tools: SandboxdTool[] = langchainTools(sbx, { names: ["run_python"] });
  const generic: StructuredToolInterface[] = langchainTools(mine);
  const text: unknown = await tools[0].invoke({ code: "6 * 7" });
  const answer: unknown = await tools[0].invoke({ name: "run_python", args: { code: "1" }, id: "call_3", type: "tool_call" });
  if (answer instanceof ToolMessage) console.log(answer.status, answer.artifact);
  console.log(text, generic.length, tools[0].toolbox.names, d.text);
  return tools.length;
}
