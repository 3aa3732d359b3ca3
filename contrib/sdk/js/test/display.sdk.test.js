// Rich display against a real sandboxd, the one at $SANDBOXD_SOCKET
// (integration/sdk_javascript_test.go starts one): display() in a cell, a
// pandas DataFrame as the last expression, and onDisplay streaming. Without
// it they skip; with it none does. Every test deletes its sessions.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Output, Sandbox, run } from "sandboxd";

import { RUN, skip, withSandbox } from "./live.js";

const CODE = [
  "class J:",
  "    def _repr_json_(self): return {'a': [1, 2]}",
  "class H:",
  "    def _repr_html_(self): return '<b>h</b>'",
  "class M:",
  "    def _repr_markdown_(self): return '# m'",
  "class S:",
  "    def _repr_svg_(self): return '<svg/>'",
  "class P:",
  "    def _repr_png_(self): return b'\\x89PNG'",
  "class B:",
  "    def _repr_mimebundle_(self, include=None, exclude=None):",
  "        return {'text/html': '<i>b</i>', 'text/markdown': '*b*', 'text/plain': 'b'}",
  "import pandas as pd, time",
  "print('before', flush=True)",
  "display(J(), H(), M())",
  "print('between', flush=True)",
  "display(S(), P(), B())",
  "time.sleep(1.5)",
  "pd.DataFrame({'x': [1, 2]})",
].join("\n");

describe("rich display", { skip }, () => {
  it("streams each display in order with stdout, before the answer, and lands it in outputs", () =>
    withSandbox(async (sbx) => {
      /** @type {Array<[string, any, number]>} */
      const events = [];
      const r = await sbx.runCode(CODE, {
        onStdout: (s) => void events.push(["out", s.trim(), performance.now()]),
        onDisplay: (o) => void events.push(["display", o, performance.now()]),
      });
      const done = performance.now();
      assert.equal(r.status, "ok", String(r.error));
      assert.deepEqual(
        events.map((e) => e[0]),
        ["out", "display", "display", "display", "out", "display", "display", "display"],
      );
      assert.deepEqual(
        events.filter((e) => e[0] === "out").map((e) => e[1]),
        ["before", "between"],
      );
      assert.ok(events.at(-1)[2] < done - 1000, "the displays came with the end of the execution: not streamed");
      assert.ok(events.every((e) => e[0] !== "display" || e[1] instanceof Output));

      const outs = r.outputs;
      assert.deepEqual(
        outs.map((o) => o.mime),
        ["application/json", "text/html", "text/markdown", "image/svg+xml", "image/png", "text/html", "text/html"],
      );
      assert.deepEqual(
        events.filter((e) => e[0] === "display").map((e) => e[1]),
        outs.slice(0, 6),
      );
      const [j, h, m, s, p, b, df] = outs;
      assert.deepEqual(j.json, { a: [1, 2] });
      assert.equal(h.html, "<b>h</b>");
      assert.equal(m.markdown, "# m");
      assert.equal(s.svg, "<svg/>");
      assert.deepEqual(p.png, Buffer.from("\x89PNG", "latin1"));
      assert.deepEqual([b.html, b.markdown, b.text, b.svg], ["<i>b</i>", "*b*", "b", null]);
      assert.deepEqual(b.bundle, { "text/html": "<i>b</i>", "text/markdown": "*b*", "text/plain": "b" });
      // An old client's view: the richest representation in mime and data.
      assert.equal(b.content.toString("utf8"), "<i>b</i>");
      // The last expression: its repr is the result, its HTML an output.
      assert.match(r.result ?? "", /x/);
      assert.match(df.html ?? "", /<table/);
      assert.equal(df.text, r.result);
    }));

  it("answers the same outputs to a plain call, and to onDisplay alone", () =>
    withSandbox(async (sbx) => {
      // A repr of its own: the default one names an address, not the same twice.
      const code = "class H:\n    def _repr_html_(self): return '<b>h</b>'\n    def __repr__(self): return 'H()'\ndisplay(H())\nimport pandas as pd\npd.DataFrame({'x': [1]})";
      const plain = await sbx.runCode(code);
      assert.deepEqual(
        plain.outputs.map((o) => o.mime),
        ["text/html", "text/html"],
      );
      /** @type {Array<string | null>} */
      const shown = [];
      const streamed = await sbx.runCode(code, { onDisplay: (o) => void shown.push(o.html) });
      assert.deepEqual(shown, ["<b>h</b>"]);
      assert.deepEqual(streamed.outputs, plain.outputs);
    }));

  it("streams a one-shot run's displays", async () => {
    /** @type {string[]} */
    const shown = [];
    const r = await run("display({'k': 1})\nclass M:\n    def _repr_markdown_(self): return '*m*'\ndisplay(M())", {
      labels: { run: RUN },
      onDisplay: (o) => void shown.push(o.markdown ?? o.text ?? ""),
    });
    assert.equal(r.status, "ok", String(r.error));
    assert.deepEqual(shown, ["{'k': 1}", "*m*"]);
  });
});
