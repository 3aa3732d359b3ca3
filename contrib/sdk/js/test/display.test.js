// Rich display against the fake daemon: Output's accessors over its bundle
// and data, and onDisplay on the NDJSON stream. display.sdk.test.js drives
// a real daemon.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, Execution, Output, Sandbox, run } from "sandboxd";

import { EXECUTION, SESSION, fakeDaemon } from "./fake.js";

const b64 = (/** @type {string} */ s) => Buffer.from(s, "utf8").toString("base64");

describe("Output", () => {
  it("takes each representation from the bundle: text as is, images decoded", () => {
    const o = Output.fromJSON({
      mime: "text/html",
      data: b64("<b>x</b>"),
      bundle: {
        "text/plain": "x",
        "text/html": "<b>x</b>",
        "text/markdown": "**x**",
        "image/svg+xml": "<svg/>",
        "application/json": '{"a": [1, 2]}',
        "image/png": Buffer.from("\x89PNG", "latin1").toString("base64"),
        "image/jpeg": Buffer.from([0xff, 0xd8]).toString("base64"),
      },
    });
    assert.equal(o.text, "x");
    assert.equal(o.html, "<b>x</b>");
    assert.equal(o.markdown, "**x**");
    assert.equal(o.svg, "<svg/>");
    assert.deepEqual(o.json, { a: [1, 2] });
    assert.deepEqual(o.png, Buffer.from("\x89PNG", "latin1"));
    assert.deepEqual(o.jpeg, Buffer.from([0xff, 0xd8]));
  });

  it("falls back to data when mime matches, null for a type it lacks", () => {
    // A figure, or an older daemon: no bundle.
    const png = Output.fromJSON({ mime: "image/png", data: Buffer.from([1, 2]).toString("base64") });
    assert.deepEqual(png.bundle, {});
    assert.deepEqual(png.png, Buffer.from([1, 2]));
    assert.deepEqual([png.html, png.text, png.json, png.markdown, png.jpeg], [null, null, null, null, null]);
    const j = Output.fromJSON({ mime: "application/json", data: b64("[1]") });
    assert.deepEqual(j.json, [1]);
    const md = new Output({ mime: "text/markdown", data: b64("# \u00e9") });
    assert.equal(md.markdown, "# \u00e9");
    // A bundle missing a type does not hide the richest one in data.
    const svg = Output.fromJSON({ mime: "image/svg+xml", data: b64("<svg/>"), bundle: { "text/plain": "fig" } });
    assert.deepEqual([svg.svg, svg.text], ["<svg/>", "fig"]);
  });

  it("reads a bundle leniently", () => {
    assert.deepEqual(Output.fromJSON({ mime: "text/plain", data: "", bundle: ["no"] }).bundle, {});
    assert.deepEqual(Output.fromJSON({ mime: "text/plain", data: "", bundle: null }).bundle, {});
  });

  it("comes with its bundle in an Execution's outputs", () => {
    const e = Execution.fromJSON({ ...EXECUTION, outputs: [{ mime: "text/html", data: b64("<i>t</i>"), bundle: { "text/html": "<i>t</i>", "text/plain": "t" } }] });
    assert.deepEqual([e.outputs[0].html, e.outputs[0].text], ["<i>t</i>", "t"]);
  });
});

const DISPLAY_1 = { mime: "text/html", data: b64("<p>1</p>"), bundle: { "text/html": "<p>1</p>", "text/plain": "1" } };
const DISPLAY_2 = { mime: "text/markdown", data: b64("*2*"), bundle: { "text/markdown": "*2*", "text/plain": "2" } };
const STREAM = [
  { type: "stdout", data: "a\n" },
  { type: "display", output: DISPLAY_1 },
  { type: "a_newer_type", data: "skipped" },
  { type: "display", output: "not an object" },
  { type: "stdout", data: "b\n" },
  { type: "display", output: DISPLAY_2 },
  { type: "done", execution: { ...EXECUTION, outputs: [DISPLAY_1, DISPLAY_2] } },
];

/**
 * @param {import("./fake.js").Reply | ((s: import("./fake.js").Seen) => import("./fake.js").Reply)} reply
 * @param {(d: Awaited<ReturnType<typeof fakeDaemon>>) => Promise<void>} fn
 */
async function withFake(reply, fn) {
  const d = await fakeDaemon(typeof reply === "function" ? reply : () => reply);
  try {
    await fn(d);
  } finally {
    await d.close();
  }
}

describe("onDisplay", () => {
  it("gets each display line as an Output, in order with stdout, before the answer", () =>
    withFake({ lines: STREAM }, async (d) => {
      /** @type {Array<[string, string | null]>} */
      const got = [];
      const e = await new Client({ socket: d.socket }).exec("s1", "x", {
        onStdout: (s) => got.push(["out", s]),
        onDisplay: async (o) => {
          assert.ok(o instanceof Output);
          await new Promise((r) => setTimeout(r, 20));
          got.push(["display", o.text]);
        },
      });
      assert.deepEqual(got, [
        ["out", "a\n"],
        ["display", "1"],
        ["out", "b\n"],
        ["display", "2"],
      ]);
      assert.deepEqual(
        e.outputs.map((o) => o.markdown ?? o.html),
        ["<p>1</p>", "*2*"],
      );
    }));

  it("alone asks for the stream", () =>
    withFake({ lines: STREAM }, async (d) => {
      /** @type {Output[]} */
      const got = [];
      await new Client({ socket: d.socket }).exec("s1", "x", { onDisplay: (o) => got.push(o) });
      assert.equal(d.seen[0].headers.accept, "application/x-ndjson");
      assert.deepEqual(
        got.map((o) => o.bundle),
        [DISPLAY_1.bundle, DISPLAY_2.bundle],
      );
    }));

  it("is not sent to the daemon by run, and streams there too", () =>
    withFake({ lines: STREAM }, async (d) => {
      /** @type {string[]} */
      const got = [];
      const e = await run("x", { socket: d.socket, onDisplay: (o) => got.push(o.mime) });
      assert.deepEqual(got, ["text/html", "text/markdown"]);
      assert.equal(e.result, "42");
      assert.equal(d.seen[0].path, "/v1/run");
      assert.equal(d.seen[0].headers.accept, "application/x-ndjson");
      assert.ok(!("onDisplay" in d.seen[0].json()) && !("on_display" in d.seen[0].json()));
    }));

  it("reaches Sandbox.runCode", () =>
    withFake(
      (s) => (s.method === "POST" && s.path === "/v1/sessions" ? { status: 201, body: SESSION } : { lines: STREAM }),
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        /** @type {Array<string | null>} */
        const got = [];
        await sbx.runCode("x", { onDisplay: (o) => got.push(o.html ?? o.markdown) });
        assert.deepEqual(got, ["<p>1</p>", "*2*"]);
        assert.equal(d.seen[1].path, `/v1/sessions/${SESSION.id}/exec`);
        assert.deepEqual(Object.keys(d.seen[1].json()).sort(), ["code", "language"]);
      },
    ));

  it("leaves a plain call unstreamed", () =>
    withFake({ body: EXECUTION }, async (d) => {
      await new Client({ socket: d.socket }).exec("s1", "x");
      assert.notEqual(d.seen[0].headers.accept, "application/x-ndjson");
    }));
});
