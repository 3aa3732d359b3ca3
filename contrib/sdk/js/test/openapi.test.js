// The models checked against the OpenAPI spec (docs/openapi.yaml, as JSON):
// every property of a schema the SDK models is a field of its model, and
// every field a model reads from the wire is a property of its schema, so a
// field added to the API, or a typo here, fails. integration/sdk_javascript_test.go
// writes the spec and names it in $SANDBOXD_TEST_OPENAPI; run alone, the
// test reads the repository's docs/openapi.json if someone made one, else
// skips saying why.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import {
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
  Session,
  Snapshot,
  Stats,
  Volume,
  VolumeMount,
} from "sandboxd";

const here = path.dirname(fileURLToPath(import.meta.url));
const specPath = process.env.SANDBOXD_TEST_OPENAPI || path.join(here, "..", "..", "..", "..", "docs", "openapi.json");
const spec = fs.existsSync(specPath) ? JSON.parse(fs.readFileSync(specPath, "utf8")) : null;
const skip = spec
  ? false
  : `no OpenAPI spec as JSON: set SANDBOXD_TEST_OPENAPI (integration/sdk_javascript_test.go does) or write ${specPath}`;

// Schema → the model that reads it. Info, Node, Template and the request
// bodies are not modelled: the SDK sends requests from plain objects (and
// ExecStarted is its id, a string; ProcessList its processes, an array).
const MODELS = {
  Limits,
  Session,
  CodeContext,
  Execution,
  ExecutionSummary,
  ExecMetrics,
  ExecError: ExecutionError,
  Output,
  FileInfo,
  FileWritten,
  // FileStat reads mkdir's created too: FolderMade is FileStat and it.
  FolderMade: FileStat,
  FileEvent,
  Stats,
  Process,
  ProcessOutput: ProcessChunk,
  Health,
  HealthCheck,
  DataDirHealth,
  ErrorDetail,
  Volume,
  VolumeMount,
  Snapshot,
};

// Wire properties whose field is not their camelCase name: a rename must be
// written here, on purpose.
/** @type {Record<string, Record<string, string>>} */
const RENAMED = {
  // ProcessChunk holds the bytes, decoded.
  ProcessOutput: { data_b64: "data" },
};

/** @param {string} s */
const camel = (s) => s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

/**
 * The keys fromJSON reads, nested objects' included under their own key:
 * the wire object is a proxy that records each property asked for.
 * @param {{fromJSON: (raw: unknown) => unknown}} model
 * @returns {Set<string>}
 */
function keysRead(model) {
  /** @type {Set<string>} */
  const read = new Set();
  const raw = new Proxy(
    {},
    {
      get(t, k) {
        if (typeof k === "string") read.add(k);
        return undefined;
      },
      has(t, k) {
        if (typeof k === "string") read.add(k);
        return false;
      },
    },
  );
  model.fromJSON(raw);
  return read;
}

describe("the models against the OpenAPI spec", { skip }, () => {
  for (const [name, model] of Object.entries(MODELS)) {
    it(`${name}: every property is a field, every field read is a property`, () => {
      const schema = spec.components.schemas[name];
      assert.ok(schema && schema.properties, `the spec has no schema ${name}`);
      const props = Object.keys(schema.properties);
      const fields = new Set(Object.keys(new model()));
      const renamed = RENAMED[name] || {};
      const missing = props.filter((p) => !fields.has(renamed[p] ?? camel(p)));
      assert.deepEqual(missing, [], `${name}'s properties the model ${model.name} lacks`);
      const unknown = [...keysRead(model)].filter((k) => !props.includes(k));
      assert.deepEqual(unknown, [], `keys ${model.name}.fromJSON reads that ${name} does not have`);
    });
  }

  it("every stream line type is one the client knows or skips", () => {
    const types = spec.components.schemas.Event.properties.type.enum;
    const src = fs.readFileSync(path.join(here, "..", "src", "client.js"), "utf8");
    const handled = [...src.matchAll(/case "([a-z_]+)":/g)].map((m) => m[1]);
    assert.deepEqual(
      types.filter((/** @type {string} */ t) => !handled.includes(t)),
      [],
      "Event types the client does not handle",
    );
  });
});
