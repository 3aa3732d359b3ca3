// Tests of the SDK against a fake daemon on a Unix socket: what goes on the
// wire, and how each answer comes back (errors by code, streams, files,
// timeouts, aborts). No sandboxd needed; sdk.test.js drives a real one.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, it } from "node:test";

import * as sandboxd from "sandboxd";
import {
  BadGateway,
  Client,
  Conflict,
  ExecMetrics,
  Execution,
  ExecutionSummary,
  Internal,
  InvalidArgument,
  NotFound,
  PayloadTooLarge,
  PermissionDenied,
  ProtocolError,
  RequestTimeout,
  ResourceExhausted,
  Sandbox,
  SandboxdError,
  Session,
  STATUS_RUNNING,
  Toolbox,
  Unavailable,
  run,
} from "sandboxd";

import { EXECUTION, METRICS, SESSION, SUMMARIES, errorReply, fakeDaemon } from "./fake.js";

/**
 * Runs fn with a fake daemon answering route, and stops the daemon after.
 * @template T
 * @param {(s: import("./fake.js").Seen) => import("./fake.js").Reply} route
 * @param {(d: Awaited<ReturnType<typeof fakeDaemon>>) => Promise<T>} fn
 */
async function withFake(route, fn) {
  const d = await fakeDaemon(route);
  try {
    return await fn(d);
  } finally {
    await d.close();
  }
}

describe("errors", () => {
  const cases = [
    // [status, code, class]
    [400, "invalid_argument", InvalidArgument],
    [404, "not_found", NotFound],
    [409, "conflict", Conflict],
    [403, "permission_denied", PermissionDenied],
    [413, "payload_too_large", PayloadTooLarge],
    [429, "resource_exhausted", ResourceExhausted],
    [500, "internal", Internal],
    [503, "unavailable", Unavailable],
    [502, "bad_gateway", BadGateway],
    // A code this SDK does not know takes its status's class and keeps its code.
    [404, "gone_elsewhere", NotFound],
    [418, "teapot", SandboxdError],
  ];
  for (const [status, code, cls] of cases) {
    it(`${status} ${code} is ${cls.name}`, () =>
      withFake(
        () => errorReply(Number(status), String(code), `it failed: ${code}`),
        async (d) => {
          const err = await new Client({ socket: d.socket }).getSession("x").then(
            () => assert.fail("no error"),
            (e) => e,
          );
          assert.equal(err.constructor, cls);
          assert.ok(err instanceof SandboxdError && err instanceof Error);
          assert.deepEqual(
            [err.code, err.status, err.message, err.requestId, err.name],
            [code, status, `it failed: ${code}`, "req-1", cls.name],
          );
          assert.equal(String(err), `${cls.name}: it failed: ${code}`);
        },
      ));
  }

  it("keeps Retry-After, in seconds or as a date", () =>
    withFake(
      (s) =>
        errorReply(429, "resource_exhausted", "too many sessions", {
          "Retry-After": s.method === "POST" ? "3" : new Date(Date.now() + 5000).toUTCString(),
        }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        await assert.rejects(c.createSession(), (e) => e instanceof ResourceExhausted && e.retryAfter === 3);
        await assert.rejects(c.health(), (e) => e instanceof ResourceExhausted && e.retryAfter > 3 && e.retryAfter <= 5);
      },
    ));

  it("takes a body that is not JSON as the message", () =>
    withFake(
      () => ({ status: 502, raw: "upstream fell over\n" }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).health(), (e) => {
          assert.ok(e instanceof BadGateway);
          assert.equal(e.message, "upstream fell over");
          return true;
        });
      },
    ));

  it("says when no daemon listens", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandboxd-js-"));
    try {
      await assert.rejects(new Client({ socket: path.join(dir, "none.sock") }).health(), (e) => {
        assert.ok(e instanceof Unavailable);
        assert.match(e.message, /is it running\?/);
        assert.equal(e.status, null);
        return true;
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("times a call out when the daemon sends nothing", () =>
    withFake(
      () => ({ body: { status: "ok" }, delayMs: 1000 }),
      async (d) => {
        const t0 = Date.now();
        await assert.rejects(new Client({ socket: d.socket, requestTimeoutMs: 200 }).health(), (e) => {
          assert.ok(e instanceof RequestTimeout);
          assert.equal(e.code, "deadline_exceeded");
          return true;
        });
        assert.ok(Date.now() - t0 < 900);
        // The call's own timeout wins over the client's.
        await assert.rejects(new Client({ socket: d.socket }).health({ requestTimeoutMs: 100 }), RequestTimeout);
      },
    ));

  it("rejects an aborted call with the signal's reason", () =>
    withFake(
      () => ({ body: { status: "ok" }, delayMs: 1000 }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 50);
        await assert.rejects(c.health({ signal: ac.signal }), (e) => e instanceof Error && e.name === "AbortError");
        await assert.rejects(c.health({ signal: AbortSignal.abort(new Error("already")) }), /already/);
        // AbortSignal.timeout rejects with its TimeoutError.
        await assert.rejects(c.health({ signal: AbortSignal.timeout(50) }), (e) => e instanceof Error && e.name === "TimeoutError");
      },
    ));

  it("calls a connection closed without an answer what it is", () =>
    withFake(
      () => ({ destroy: true }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).health(), Unavailable);
      },
    ));
});

describe("requests", () => {
  it("sends the create's fields, snake_case, and reads the session", () =>
    withFake(
      () => ({ status: 201, body: SESSION }),
      async (d) => {
        const sbx = await Sandbox.create({
          template: "python",
          memoryMb: 256,
          cpus: 0.5,
          timeoutS: 10,
          idleTimeoutS: 0,
          labels: { agent: "a1" },
          allow: "pypi.org",
          egressKbps: undefined,
          socket: d.socket,
        });
        assert.deepEqual(d.seen[0].json(), {
          template: "python",
          memory_mb: 256,
          cpus: 0.5,
          timeout_s: 10,
          idle_timeout_s: 0,
          allow: ["pypi.org"],
          labels: { agent: "a1" },
        });
        assert.equal(d.seen[0].headers["content-type"], "application/json");
        assert.match(String(d.seen[0].headers["user-agent"]), /^sandboxd-js\//);
        const s = sbx.session;
        assert.deepEqual(
          [sbx.id, s.status, s.limits.memoryMb, s.limits.idleTimeoutS, s.labels, s.runtime, s.ownerUid],
          [SESSION.id, "running", 256, 3600, { agent: "a1" }, "runc", 0],
        );
        assert.equal(s.createdAt?.toISOString(), "2026-01-02T03:04:05.123Z");
        assert.equal(s.lastUsedAt, null);
        // A daemon that grants no MCP server omits mcp_servers.
        assert.deepEqual(s.mcpServers, []);
      },
    ));

  it("sends and reads the session's MCP servers", () =>
    withFake(
      () => ({ status: 201, body: { ...SESSION, mcp_servers: ["github", "slack"] } }),
      async (d) => {
        const sbx = await Sandbox.create({ mcpServers: ["github", "slack"], socket: d.socket });
        assert.deepEqual(d.seen[0].json(), { mcp_servers: ["github", "slack"] });
        assert.deepEqual(sbx.session.mcpServers, ["github", "slack"]);
        // A single name goes as a list, as allow's does; junk reads as none.
        await new Client({ socket: d.socket }).createSession({ mcpServers: "github" });
        assert.deepEqual(d.seen[1].json(), { mcp_servers: ["github"] });
        assert.deepEqual(Session.fromJSON({ id: "s", mcp_servers: "github" }).mcpServers, []);
      },
    ));

  it("sends and reads the session's idle action", () =>
    withFake(
      () => ({ status: 201, body: { ...SESSION, idle_action: "pause" } }),
      async (d) => {
        const sbx = await Sandbox.create({ idleAction: "pause", socket: d.socket });
        assert.deepEqual(d.seen[0].json(), { idle_action: "pause" });
        assert.equal(sbx.session.idleAction, "pause");
        await new Client({ socket: d.socket }).createSession({ idleAction: "stop" });
        assert.deepEqual(d.seen[1].json(), { idle_action: "stop" });
        // A daemon that does not say reads as "".
        assert.equal(Session.fromJSON(SESSION).idleAction, "");
      },
    ));

  it("sends and reads the session's name", () =>
    withFake(
      () => ({ status: 201, body: { ...SESSION, name: "build-1" } }),
      async (d) => {
        const sbx = await Sandbox.create({ name: "build-1", socket: d.socket });
        assert.deepEqual(d.seen[0].json(), { name: "build-1" });
        assert.equal(sbx.session.name, "build-1");
        assert.equal(Session.fromJSON(SESSION).name, "");
      },
    ));

  it("interrupts the running execution", () => {
    let interrupted = true;
    return withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path === "/v1/sessions/gone/interrupt") return errorReply(404, "not_found", "no session gone");
        return { body: { interrupted } };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        const sbx = await Sandbox.create({ socket: d.socket });
        const cases = [
          // [id, call]
          ["s1", () => c.interrupt("s1")],
          [SESSION.id, () => sbx.interrupt()],
        ];
        for (const [id, call] of cases) {
          for (const want of [true, false]) {
            interrupted = want;
            d.seen.length = 0;
            assert.equal(await /** @type {() => Promise<boolean>} */ (call)(), want);
            const raw = d.seen[0];
            assert.deepEqual([raw.method, raw.path, raw.body.length], ["POST", `/v1/sessions/${id}/interrupt`, 0]);
          }
        }
        await assert.rejects(c.interrupt("gone"), NotFound);
      },
    );
  });

  it("pauses and resumes, keeping the session it answers", () =>
    withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path === "/v1/sessions/busy/pause") return errorReply(409, "conflict", "an execution is running: interrupt it or wait");
        return { body: { ...SESSION, status: s.path.endsWith("/pause") ? "paused" : "running" } };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        for (const [op, call, status] of /** @type {const} */ ([
          ["pause", (/** @type {string} */ id) => c.pauseSession(id), "paused"],
          ["resume", (/** @type {string} */ id) => c.resumeSession(id), "running"],
        ])) {
          d.seen.length = 0;
          assert.equal((await call("s1")).status, status);
          assert.deepEqual([d.seen[0].method, d.seen[0].path, d.seen[0].body.length], ["POST", `/v1/sessions/s1/${op}`, 0]);
        }
        const sbx = await Sandbox.create({ socket: d.socket });
        const p = await sbx.pause();
        assert.deepEqual([p.status, sbx.session.status, d.seen.at(-1)?.path], ["paused", "paused", `/v1/sessions/${SESSION.id}/pause`]);
        const r = await sbx.resume();
        assert.deepEqual([r.status, sbx.session.status, d.seen.at(-1)?.path], ["running", "running", `/v1/sessions/${SESSION.id}/resume`]);
        await assert.rejects(c.pauseSession("busy"), (e) => e instanceof Conflict && e.status === 409);
      },
    ));

  it("sends an Idempotency-Key, and tells a create made from one that was not", () => {
    /** @type {Map<string, string>} */
    const made = new Map();
    return withFake(
      (s) => {
        const key = s.headers["idempotency-key"];
        if (key === undefined) return { status: 201, body: SESSION };
        const body = s.body.toString();
        if (!made.has(String(key))) {
          made.set(String(key), body);
          return { status: 201, body: SESSION };
        }
        if (made.get(String(key)) !== body) return errorReply(409, "conflict", `Idempotency-Key ${key} made session ${SESSION.id} with another request`);
        return { status: 200, body: SESSION };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        // Without a key, no header: a plain create, as before.
        assert.equal((await c.createSession({ labels: { a: "1" } })).id, SESSION.id);
        assert.equal(d.seen.at(-1)?.headers["idempotency-key"], undefined);
        // The key goes as the header, never in the body; 201 then 200.
        let r = await c.createSessionOnce("k-1", { memoryMb: 256 });
        assert.deepEqual([r.session.id, r.created, d.seen.at(-1)?.headers["idempotency-key"], d.seen.at(-1)?.json()], [SESSION.id, true, "k-1", { memory_mb: 256 }]);
        r = await c.createSessionOnce("k-1", { memoryMb: 256 });
        assert.deepEqual([r.session.id, r.created], [SESSION.id, false]);
        assert.equal((await c.createSession({ idempotencyKey: "k-1", memoryMb: 256 })).id, SESSION.id);
        assert.equal(d.seen.at(-1)?.headers["idempotency-key"], "k-1");
        // The key with another request is a conflict.
        await assert.rejects(c.createSession({ idempotencyKey: "k-1", memoryMb: 512 }), Conflict);
        // An empty key would be none: refused before anything is sent.
        const n = d.seen.length;
        await assert.rejects(c.createSession({ idempotencyKey: "" }), TypeError);
        assert.equal(d.seen.length, n);

        // Sandbox says whether it made the session; connect never did.
        const sbx = await Sandbox.create({ idempotencyKey: "k-2", labels: { agent: "a1" }, socket: d.socket });
        assert.deepEqual([sbx.created, d.seen.at(-1)?.headers["idempotency-key"], d.seen.at(-1)?.json()], [true, "k-2", { labels: { agent: "a1" } }]);
        const again = await Sandbox.create({ idempotencyKey: "k-2", labels: { agent: "a1" }, socket: d.socket });
        assert.deepEqual([again.id, again.created], [sbx.id, false]);
        assert.equal((await Sandbox.create({ socket: d.socket })).created, true);
        assert.equal((await Sandbox.connect(sbx.id, { socket: d.socket })).created, false);
        // A Toolbox takes it as any option of Sandbox.create.
        const tb = new Toolbox({ idempotencyKey: "k-3", socket: d.socket });
        try {
          assert.equal((await tb.getSandbox()).id, SESSION.id);
          assert.equal(d.seen.at(-1)?.headers["idempotency-key"], "k-3");
        } finally {
          await tb.close();
        }
      },
    );
  });

  it("starts an execution without waiting for it", () =>
    withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path === "/v1/sessions/bad/exec") return { status: 202, body: { eid: "e9" } }; // not the contract's answer
        return { status: 202, body: { id: "e9" } };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        assert.equal(await c.startExec("s1", "x", { language: "shell", timeoutS: 2.5, env: { A: "1" }, cwd: "sub" }), "e9");
        const raw = d.seen.at(-1);
        assert.deepEqual([raw?.method, raw?.path, raw?.headers.accept], ["POST", "/v1/sessions/s1/exec", undefined]);
        assert.deepEqual(raw?.json(), { language: "shell", code: "x", timeout_s: 2.5, env: { A: "1" }, cwd: "sub", wait: false });
        const sbx = await Sandbox.create({ socket: d.socket });
        const cases = [
          // [call, body]
          [() => sbx.submit("print(1)"), { language: "python", code: "print(1)", wait: false }],
          [() => sbx.submit("ls", { language: "shell", timeoutS: 1 }), { language: "shell", code: "ls", timeout_s: 1, wait: false }],
          [() => sbx.commands.submit("make", { cwd: "p" }), { language: "shell", code: "make", cwd: "p", wait: false }],
        ];
        for (const [call, body] of cases) {
          assert.equal(await /** @type {() => Promise<string>} */ (call)(), "e9");
          assert.deepEqual([d.seen.at(-1)?.path, d.seen.at(-1)?.json()], [`/v1/sessions/${SESSION.id}/exec`, body]);
        }
        await assert.rejects(c.startExec("bad", "x"), ProtocolError);
      },
    ));

  it("gets an execution, and waits for its end", () => {
    let left = 0;
    return withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path.endsWith("/gone")) return errorReply(404, "not_found", "no execution gone in session s1");
        if (s.path.endsWith("/forever")) return { body: { ...EXECUTION, status: "running", stdout: "tick\n" } };
        if (left > 0) {
          left--;
          return { body: { ...EXECUTION, id: "e9", status: "running", stdout: "0\n", result: null, outputs: [] } };
        }
        return { body: { ...EXECUTION, id: "e9", metrics: METRICS, code_sha256: "ab".repeat(32), caller_uid: 1000 } };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        left = 1;
        let e = await c.execution("s1", "a/b");
        assert.deepEqual([d.seen.at(-1)?.method, d.seen.at(-1)?.path], ["GET", "/v1/sessions/s1/executions/a%2Fb"]);
        assert.deepEqual([e.status, e.stdout, e.result, e.ok], [STATUS_RUNNING, "0\n", null, false]);
        e = await c.execution("s1", "e9");
        assert.deepEqual([e.status, e.result, e.callerUid, e.codeSha256], ["ok", "42", 1000, "ab".repeat(32)]);
        assert.deepEqual(e.metrics, new ExecMetrics({ wallMs: 3.2, cpuMs: 2.9, memoryPeakBytes: 31457280 }));

        // It asks until the execution no longer runs.
        const sbx = await Sandbox.create({ socket: d.socket });
        for (const wait of [() => c.waitExecution("s1", "e9", { pollMs: 10 }), () => sbx.waitExecution("e9", { pollMs: 10 })]) {
          left = 3;
          d.seen.length = 0;
          e = await wait();
          assert.deepEqual([e.status, e.id, d.seen.length], ["ok", "e9", 4]);
          assert.ok(d.seen.every((r) => r.method === "GET" && r.path.endsWith("/executions/e9")));
        }
        assert.equal((await sbx.execution("e9")).status, "ok");

        // A bounded wait gives up with RequestTimeout; the execution runs on.
        const t0 = Date.now();
        await assert.rejects(sbx.waitExecution("forever", { timeoutMs: 200, pollMs: 50 }), (err) => {
          assert.ok(err instanceof RequestTimeout);
          assert.match(err.message, /forever/);
          return true;
        });
        assert.ok(Date.now() - t0 < 2000);
        // An aborted wait rejects with the signal's reason, between two asks too.
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 100);
        await assert.rejects(sbx.waitExecution("forever", { pollMs: 5000, signal: ac.signal }), { name: "AbortError" });
        await assert.rejects(sbx.waitExecution("gone"), NotFound);
        await assert.rejects(c.waitExecution("s1", "e9", { pollMs: 0 }), RangeError);
      },
    );
  });

  it("lists executions as summaries", () =>
    withFake(
      (s) => (s.path === "/v1/sessions" ? { status: 201, body: SESSION } : { body: { executions: [...SUMMARIES, "junk", null] } }),
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        for (const call of [() => sbx.client.executions(sbx.id, { limit: 3 }), () => sbx.executions({ limit: 3 })]) {
          const list = await call();
          assert.equal(d.seen.at(-1)?.query.get("limit"), "3");
          assert.equal(list.length, 3);
          const [running, failed, old] = list;
          assert.ok(running instanceof ExecutionSummary);
          assert.deepEqual(
            [running.id, running.status, running.exitCode, running.callerUid, running.ok],
            ["e3", "running", null, 1000, false],
          );
          assert.deepEqual(running.metrics, new ExecMetrics({ wallMs: 3.2, cpuMs: 2.9, memoryPeakBytes: 31457280 }));
          // uid 0 (root) is a uid, not an absent one.
          assert.deepEqual(
            [failed.exitCode, failed.callerUid, failed.truncated, failed.codeSha256, failed.durationMs],
            [1, 0, true, "cd".repeat(32), 3.2],
          );
          assert.deepEqual([old.exitCode, old.ok, old.metrics, old.callerUid, old.codeSha256], [0, true, null, null, ""]);
          assert.equal(old.startedAt?.toISOString(), "2026-01-02T03:04:05.000Z");
          // Summaries hold no output.
          assert.equal("stdout" in running, false);
        }
      },
    ));

  it("drains the node, and undoes it", () =>
    withFake(
      (s) => (s.method === "GET" ? { body: { node_id: "n1", state: "ready" } } : { body: { node_id: "n1", state: s.json().drain ? "draining" : "ready" } }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        assert.equal((await c.node()).state, "ready");
        for (const [call, on, state] of /** @type {const} */ ([
          [() => c.drain(), true, "draining"],
          [() => c.drain(false), false, "ready"],
          [() => c.drain(true, { requestTimeoutMs: 1000 }), true, "draining"],
        ])) {
          const n = await call();
          const raw = d.seen.at(-1);
          assert.deepEqual([raw?.method, raw?.path, raw?.json(), n.state, n.node_id], ["POST", "/v1/node/drain", { drain: on }, state, "n1"]);
        }
        const d2 = await fakeDaemon(() => errorReply(403, "permission_denied", "only root may drain the node"));
        try {
          await assert.rejects(new Client({ socket: d2.socket }).drain(), PermissionDenied);
        } finally {
          await d2.close();
        }
      },
    ));

  it("refuses a field the contract does not have", async () => {
    await assert.rejects(Sandbox.create({ memroyMb: 1, socket: "/nonexistent" }), TypeError);
    await assert.rejects(new Client({ socket: "/nonexistent" }).run("1", { memroyMb: 1 }), TypeError);
    await assert.rejects(new Client({ socket: "/nonexistent" }).listSessions({ label: "agent" }), TypeError);
  });

  it("takes the socket from SANDBOXD_SOCKET", () =>
    withFake(
      () => ({ body: { status: "ok" } }),
      async (d) => {
        const old = process.env.SANDBOXD_SOCKET;
        process.env.SANDBOXD_SOCKET = d.socket;
        try {
          const c = new Client();
          assert.equal(c.socket, d.socket);
          assert.equal(await c.health(), "ok");
        } finally {
          if (old === undefined) delete process.env.SANDBOXD_SOCKET;
          else process.env.SANDBOXD_SOCKET = old;
        }
        delete process.env.SANDBOXD_SOCKET;
        try {
          assert.equal(new Client().socket, "/run/sandboxd/sandboxd.sock");
        } finally {
          if (old !== undefined) process.env.SANDBOXD_SOCKET = old;
        }
      },
    ));

  it("escapes paths and sends queries", () =>
    withFake(
      () => ({ body: { sessions: [SESSION], executions: [EXECUTION] } }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        const cases = [
          // [call, method, raw path, query]
          [() => c.getSession("a/b?c"), "GET", "/v1/sessions/a%2Fb%3Fc", []],
          [() => c.listSessions({ label: "agent=a1", labels: { team: "x y" } }), "GET", "/v1/sessions", ["agent=a1", "team=x y"]],
          [() => c.listSessions({ label: ["a=1", "b=2"] }), "GET", "/v1/sessions", ["a=1", "b=2"]],
          [() => Sandbox.list({ labels: { a: "1" }, socket: d.socket }), "GET", "/v1/sessions", ["a=1"]],
          [() => c.executions("s1", { limit: 5 }), "GET", "/v1/sessions/s1/executions", []],
          [() => c.executions("s1"), "GET", "/v1/sessions/s1/executions", []],
          [() => c.stopSession("s1"), "POST", "/v1/sessions/s1/stop", []],
          [() => c.startSession("s1"), "POST", "/v1/sessions/s1/start", []],
          [() => c.restartSession("s1"), "POST", "/v1/sessions/s1/restart", []],
          [() => c.pauseSession("s1"), "POST", "/v1/sessions/s1/pause", []],
          [() => c.resumeSession("s1"), "POST", "/v1/sessions/s1/resume", []],
          [() => c.interrupt("s1"), "POST", "/v1/sessions/s1/interrupt", []],
          [() => c.stats("s1"), "GET", "/v1/sessions/s1/stats", []],
          [() => c.deleteSession("s1"), "DELETE", "/v1/sessions/s1", []],
        ];
        for (const [call, method, p, labels] of cases) {
          d.seen.length = 0;
          await /** @type {() => Promise<unknown>} */ (call)();
          assert.equal(d.seen.length, 1);
          assert.deepEqual([d.seen[0].method, d.seen[0].path, d.seen[0].query.getAll("label")], [method, p, labels]);
        }
        d.seen.length = 0;
        const hist = await c.executions("s1", { limit: 5 });
        assert.equal(d.seen[0].query.get("limit"), "5");
        assert.deepEqual(hist.map((e) => e.id), ["e1"]);
        const list = await c.listSessions();
        assert.deepEqual(list.map((s) => s.id), [SESSION.id]);
      },
    ));

  it("sends an exec's body and reads the Execution", () =>
    withFake(
      () => ({ body: EXECUTION }),
      async (d) => {
        const e = await new Client({ socket: d.socket }).exec("s1", "x", {
          language: "shell",
          timeoutS: 2.5,
          env: { A: "1" },
          cwd: "sub",
        });
        assert.deepEqual(d.seen[0].json(), { language: "shell", code: "x", timeout_s: 2.5, env: { A: "1" }, cwd: "sub" });
        assert.equal(d.seen[0].headers.accept, undefined);
        assert.deepEqual([e.result, e.status, e.ok, e.text, e.exitCode, e.sessionId], ["42", "ok", true, "42", 0, SESSION.id]);
        assert.deepEqual([...(e.outputs[0].png || [])], [0x89, 0x50, 0x4e, 0x47]);
        assert.equal(e.outputs[0].html, null);
        assert.equal(e.startedAt?.toISOString(), "2026-01-02T03:04:05.000Z");
      },
    ));

  it("sends a one-shot run's body", () =>
    withFake(
      () => ({ body: EXECUTION }),
      async (d) => {
        await run("print(1)", {
          files: { "a.txt": "hi", "b.bin": Buffer.from([0, 255]) },
          timeoutS: 1.5,
          memoryMb: 128,
          mcpServers: ["github"],
          socket: d.socket,
        });
        assert.equal(d.seen[0].path, "/v1/run");
        assert.deepEqual(d.seen[0].json(), {
          memory_mb: 128,
          mcp_servers: ["github"],
          timeout_s: 2,
          language: "python",
          code: "print(1)",
          files: [
            { path: "a.txt", content_base64: "aGk=" },
            { path: "b.bin", content_base64: "AP8=" },
          ],
        });
      },
    ));

  it("sends an install's body, and a network change", () =>
    withFake(
      (s) => (s.path.endsWith("/packages") ? { body: EXECUTION } : { status: s.method === "POST" ? 201 : 200, body: SESSION }),
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        await sbx.install("numpy==1.26.4", { indexUrl: "http://index/simple" });
        assert.deepEqual([d.seen[1].path, d.seen[1].json()], [
          `/v1/sessions/${SESSION.id}/packages`,
          { packages: ["numpy==1.26.4"], index_url: "http://index/simple" },
        ]);
        await sbx.install(["a", "b"]);
        assert.deepEqual(d.seen[2].json(), { packages: ["a", "b"] });
        await sbx.setNetwork("allowlist", { allow: "pypi.org", egressKbps: 100 });
        assert.deepEqual([d.seen[3].method, d.seen[3].json()], ["PATCH", { network: "allowlist", allow: ["pypi.org"], egress_kbps: 100 }]);
      },
    ));
});

describe("streams", () => {
  it("calls back in order, and awaits a callback's promise", () => {
    const lines = [
      { type: "stdout", data: "0\n" },
      { type: "stderr", data: "warn\n" },
      { type: "progress", data: "a newer daemon's" },
      // A line split across two chunks, and a character split across them.
      '{"type":"stdout","da',
      'ta":"1 \u00e9\\n"}\n',
      Buffer.from('{"type":"stdout","data":"\u00e9'),
      '"}\n',
      { type: "done", execution: EXECUTION },
    ];
    return withFake(
      () => ({ lines }),
      async (d) => {
        /** @type {string[][]} */
        const got = [];
        const e = await new Client({ socket: d.socket }).exec("s1", "x", {
          onStdout: (s) => got.push(["out", s]),
          onStderr: async (s) => {
            await new Promise((r) => setTimeout(r, 30));
            got.push(["err", s]);
          },
        });
        assert.deepEqual(got, [
          ["out", "0\n"],
          ["err", "warn\n"],
          ["out", "1 \u00e9\n"],
          ["out", "\u00e9"],
        ]);
        assert.equal(e.result, "42");
        assert.equal(d.seen[0].headers.accept, "application/x-ndjson");
      },
    );
  });

  it("throws an error line's class", () =>
    withFake(
      () => ({ lines: [{ type: "stdout", data: "a" }, { type: "error", error: { code: "conflict", message: "stopped: start it first" } }] }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} }), (e) => {
          assert.ok(e instanceof Conflict);
          assert.deepEqual([e.message, e.status, e.requestId], ["stopped: start it first", null, "req-1"]);
          return true;
        });
      },
    ));

  it("calls a stream that ends early a ProtocolError", () =>
    withFake(
      () => ({ lines: [{ type: "stdout", data: "a" }] }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} }), ProtocolError);
      },
    ));

  it("calls a stream cut short a ProtocolError", () =>
    withFake(
      () => ({ lines: [{ type: "stdout", data: "a" }], cut: true }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} }), ProtocolError);
      },
    ));

  it("calls a bad line a ProtocolError", () =>
    withFake(
      () => ({ lines: ["not json\n"] }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} }), ProtocolError);
      },
    ));

  it("takes an Execution whole from a daemon that does not stream", () =>
    withFake(
      () => ({ body: EXECUTION }),
      async (d) => {
        const e = await new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} });
        assert.equal(e.result, "42");
      },
    ));

  it("times out when the daemon sends nothing between lines, not over the whole stream", () =>
    withFake(
      () => ({ lines: [1, 2, 3, 4].map((i) => ({ type: "stdout", data: String(i) })).concat([{ type: "done", execution: EXECUTION }]), lineDelayMs: 250 }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        /** @type {string[]} */
        const got = [];
        // 1.25 s in all, never 250 ms without a line: a 600 ms timeout holds.
        const e = await c.exec("s1", "x", { onStdout: (s) => got.push(s), requestTimeoutMs: 600 });
        assert.deepEqual([got, e.result], [["1", "2", "3", "4"], "42"]);
        await assert.rejects(c.exec("s1", "x", { onStdout: () => {}, requestTimeoutMs: 100 }), RequestTimeout);
      },
    ));
});

describe("sandbox", () => {
  it("bounds an execution by its timeout and a grace, else the session's", () =>
    withFake(
      (s) => (s.path === "/v1/sessions" ? { status: 201, body: SESSION } : { body: EXECUTION, delayMs: 300 }),
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket, requestTimeoutMs: 100 });
        // The client's 100 ms is for other calls: an execution waits for
        // the session's timeout_s (30) and a grace.
        assert.equal((await sbx.runCode("x")).result, "42");
        await assert.rejects(sbx.runCode("x", { requestTimeoutMs: 100 }), RequestTimeout);
        assert.equal((await sbx.commands.run("ls", { timeoutS: 1 })).result, "42");
        assert.deepEqual(d.seen.at(-1)?.json(), { language: "shell", code: "ls", timeout_s: 1 });
      },
    ));

  it("kill is false for a session gone, and await using deletes", () => {
    let deletes = 0;
    return withFake(
      (s) => {
        if (s.method === "DELETE") return ++deletes === 1 ? { status: 204 } : errorReply(404, "not_found", "no such session");
        return { status: 201, body: SESSION };
      },
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        await sbx[Symbol.asyncDispose]();
        assert.equal(deletes, 1);
        assert.equal(await sbx.kill(), false);
        assert.equal(await sbx.delete(), false);
        assert.equal(String(sbx), `Sandbox(id=${SESSION.id}, status=running, socket=${d.socket})`);
      },
    );
  });

  it("connects to a session and shares a client", () =>
    withFake(
      () => ({ body: SESSION }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        const sbx = await Sandbox.connect(SESSION.id, { client: c });
        assert.equal(sbx.client, c);
        assert.equal(d.seen[0].path, `/v1/sessions/${SESSION.id}`);
        assert.equal(await sbx.isRunning(), true);
      },
    ));
});

describe("files", () => {
  it("writes, reads, lists, removes", () => {
    /** @type {Map<string, Buffer>} */
    const store = new Map();
    return withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        const p = s.query.get("path") || "";
        if (s.method === "PUT") {
          store.set(p, s.body);
          return { status: 201, body: { path: "/workspace/" + p, size: s.body.length } };
        }
        if (s.method === "DELETE") {
          store.delete(p);
          return { status: 204 };
        }
        if (p === "." || p === "/workspace") {
          return {
            body: {
              entries: [...store.keys()].map((name) => ({
                name,
                type: "file",
                size: store.get(name)?.length,
                mode: "-rw-r--r--",
                modified_at: "2026-01-02T03:04:05Z",
              })),
            },
          };
        }
        const b = store.get(p);
        return b ? { raw: b } : errorReply(404, "not_found", `no file ${p}`);
      },
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        const data = Buffer.alloc(768, 0).map((_, i) => i % 256);
        const w = await sbx.files.write("data.bin", data);
        assert.deepEqual([w.path, w.size], ["/workspace/data.bin", 768]);
        assert.equal(d.seen.at(-1)?.headers["content-type"], "application/octet-stream");
        assert.equal(d.seen.at(-1)?.headers["content-length"], "768");
        assert.deepEqual(await sbx.files.read("data.bin"), data);

        await sbx.files.write("t.txt", "h\u00e9llo");
        assert.equal(await sbx.files.read("t.txt", "utf8"), "h\u00e9llo");
        assert.equal(await sbx.files.read("t.txt", { encoding: "utf8" }), "h\u00e9llo");
        assert.equal(await sbx.files.readText("t.txt"), "h\u00e9llo");
        await sbx.files.write("u8", new Uint8Array([1, 2, 3]).subarray(1));
        assert.deepEqual([...store.get("u8") || []], [2, 3]);

        // A stream goes chunked.
        await sbx.files.write("s.txt", Readable.from([Buffer.from("stre"), Buffer.from("amed")]));
        assert.equal(store.get("s.txt")?.toString(), "streamed");
        assert.equal(d.seen.at(-1)?.headers["transfer-encoding"], "chunked");
        async function* gen() {
          yield new Uint8Array([104, 105]);
        }
        await sbx.files.write("g.txt", gen());
        assert.equal(store.get("g.txt")?.toString(), "hi");

        const entries = await sbx.files.list();
        const dataInfo = entries.find((e) => e.name === "data.bin");
        assert.deepEqual([dataInfo?.type, dataInfo?.size, dataInfo?.isDir], ["file", 768, false]);
        assert.equal(dataInfo?.modifiedAt?.getUTCFullYear(), 2026);
        await assert.rejects(sbx.files.read("."), (e) => /** @type {any} */ (e).code === "EISDIR");
        await assert.rejects(sbx.files.list("data.bin"), (e) => /** @type {any} */ (e).code === "ENOTDIR");
        assert.equal(await sbx.files.exists("data.bin"), true);
        assert.equal(await sbx.files.exists("other.bin"), false);
        assert.equal(await sbx.files.exists("/workspace"), true);
        await sbx.files.remove("data.bin");
        assert.equal(await sbx.files.exists("data.bin"), false);
        await assert.rejects(sbx.files.read("data.bin"), NotFound);
      },
    );
  });
});

describe("uploads", () => {
  it("tells the daemon's answer to an upload it refused before reading it", async () => {
    const d = await fakeDaemon(
      () => ({ status: 500 }),
      (method) => (method === "PUT" ? errorReply(413, "payload_too_large", "the upload is over max_upload_bytes") : undefined),
    );
    try {
      const c = new Client({ socket: d.socket });
      let closed = false;
      // 64 MiB, more than the socket buffers hold: the daemon answers and
      // closes while it is still being sent.
      const chunk = Buffer.alloc(1 << 20, 1);
      const body = Readable.from((function* () {
        for (let i = 0; i < 64; i++) yield chunk;
      })());
      body.on("close", () => (closed = true));
      await assert.rejects(c.putFile("s1", "big.bin", body), (e) => {
        assert.ok(e instanceof PayloadTooLarge, String(e));
        assert.equal(e.message, "the upload is over max_upload_bytes");
        return true;
      });
      await new Promise((r) => setImmediate(r));
      assert.ok(closed, "the upload's source was left open");
      await assert.rejects(c.putFile("s1", "big.bin", Buffer.alloc(64 << 20)), PayloadTooLarge);
    } finally {
      await d.close();
    }
  });
});

describe("models", () => {
  const cases = [
    // [json, check]
    [{}, (/** @type {Execution} */ e) => e.status === "" && e.result === null && e.outputs.length === 0 && e.error === null],
    [
      { result: null, error: { name: "ZeroDivisionError", value: "division by zero" } },
      (/** @type {Execution} */ e) => String(e.error) === "ZeroDivisionError: division by zero",
    ],
    [{ exit_code: "x", outputs: "x" }, (/** @type {Execution} */ e) => e.exitCode === 0 && e.outputs.length === 0],
    [{ started_at: "not a time" }, (/** @type {Execution} */ e) => e.startedAt === null],
    [{ started_at: "2026-01-02T03:04:05.5+02:00" }, (/** @type {Execution} */ e) => e.startedAt?.toISOString() === "2026-01-02T01:04:05.500Z"],
    [
      { outputs: [{ mime: "text/html", data: Buffer.from("<b>x</b>").toString("base64") }, null] },
      (/** @type {Execution} */ e) => e.outputs.length === 1 && e.outputs[0].html === "<b>x</b>" && e.outputs[0].png === null,
    ],
    [null, (/** @type {Execution} */ e) => e.status === ""],
    // A daemon (or a history) older than metrics, code_sha256 and caller_uid.
    [{}, (/** @type {Execution} */ e) => e.metrics === null && e.codeSha256 === "" && e.callerUid === null],
    [{ metrics: "x", caller_uid: "0" }, (/** @type {Execution} */ e) => e.metrics === null && e.callerUid === null],
    [
      { metrics: { cpu_ms: 1.5 }, caller_uid: 0 },
      (/** @type {Execution} */ e) => e.metrics?.cpuMs === 1.5 && e.metrics.wallMs === 0 && e.callerUid === 0,
    ],
    [{ status: "running" }, (/** @type {Execution} */ e) => e.status === STATUS_RUNNING && !e.ok],
  ];
  for (const [raw, check] of cases) {
    it(`reads ${JSON.stringify(raw)} leniently`, () => {
      assert.ok(/** @type {(e: Execution) => boolean} */ (check)(Execution.fromJSON(raw)));
    });
  }

  it("exports what the Python SDK does", () => {
    for (const name of [
      "Sandbox",
      "Client",
      "Commands",
      "Files",
      "run",
      "SandboxdError",
      "InvalidArgument",
      "NotFound",
      "Conflict",
      "PermissionDenied",
      "PayloadTooLarge",
      "ResourceExhausted",
      "Internal",
      "Unavailable",
      "BadGateway",
      "RequestTimeout",
      "ProtocolError",
      "ExecMetrics",
      "Execution",
      "ExecutionError",
      "ExecutionSummary",
      "FileInfo",
      "FileWritten",
      "Limits",
      "Output",
      "Session",
      "Stats",
      "DEFAULT_SOCKET",
      "SOCKET_ENV",
    ]) {
      assert.ok(name in sandboxd, name);
    }
  });
});
