// The tool definitions of tools.json, and the check of a model's arguments
// against their input schemas.
//
// tools.json is a byte-for-byte copy of the Python SDK's, the one copy of
// the definitions (a test and TestJSSDK compare them), so the check reads
// the schemas rather than restating them in code. It knows the few JSON
// Schema keywords the file may use (its "$comment" lists them); a test
// fails if the file uses another, which would go unchecked here.

import fs from "node:fs";

/** What the check below understands; "description" and "default" say nothing to check. */
export const SCHEMA_KEYWORDS = Object.freeze([
  "type",
  "description",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "default",
  "minItems",
  "minLength",
]);

/**
 * @typedef {{name: string, description: string, input_schema: Record<string, any>}} ToolDefinition
 */

function load() {
  // Read beside this module rather than imported as JSON: import
  // attributes are not in every Node 18.
  const doc = JSON.parse(fs.readFileSync(new URL("./tools.json", import.meta.url), "utf8"));
  if (!doc || typeof doc !== "object" || !Array.isArray(doc.tools)) {
    throw new Error("sandboxd/src/tools.json has no list of tools: the package is damaged");
  }
  return doc;
}

const DOCUMENT = load();

/** The version of tools.json: it grows when a tool or its arguments change. */
export const VERSION = Number(DOCUMENT.version || 0);

/** @type {Map<string, ToolDefinition>} */
export const TOOLS = new Map(DOCUMENT.tools.map((/** @type {ToolDefinition} */ t) => [t.name, t]));

/**
 * Copies of the definitions named (all, in the file's order, when none
 * are), so a caller that edits one leaves the canonical one as it is. A
 * name that is no tool is the caller's mistake: a TypeError.
 * @param {Iterable<string> | string | null | undefined} names
 * @returns {ToolDefinition[]}
 */
export function pick(names) {
  const chosen = names === undefined || names === null ? [...TOOLS.keys()] : typeof names === "string" ? [names] : [...names];
  return chosen.map((n) => {
    const t = TOOLS.get(n);
    if (!t) throw new TypeError(`no tool ${pyRepr(n)}: the tools are ${[...TOOLS.keys()].join(", ")}`);
    return structuredClone(t);
  });
}

/** @type {Record<string, string>} */
const NAMES = {
  object: "an object",
  string: "a string",
  array: "an array",
  integer: "an integer",
  number: "a number",
  boolean: "true or false",
  null: "null",
};

/**
 * @param {unknown} v
 * @param {string} typ
 */
function is(v, typ) {
  switch (typ) {
    case "object":
      return v !== null && typeof v === "object" && !Array.isArray(v);
    case "string":
      return typeof v === "string";
    case "array":
      return Array.isArray(v);
    case "integer":
      return Number.isInteger(v);
    case "number":
      return typeof v === "number";
    case "boolean":
      return typeof v === "boolean";
    case "null":
      return v === null;
  }
  return false;
}

/** @param {unknown} v */
function jsonType(v) {
  for (const name of Object.keys(NAMES)) if (is(v, name)) return NAMES[name];
  return typeof v;
}

/**
 * The first way value breaks schema, said for a model to fix it (the
 * Python SDK's sentences, word for word); null when it fits. `where` names
 * the value in that sentence.
 * @param {Record<string, any>} schema
 * @param {unknown} value
 * @param {string} where
 * @returns {string | null}
 */
export function problem(schema, value, where) {
  const typ = schema.type;
  if (typeof typ === "string" && !is(value, typ)) return `${where} must be ${NAMES[typ] ?? typ}, not ${jsonType(value)}`;
  if ("enum" in schema && !schema.enum.some((/** @type {unknown} */ e) => e === value)) {
    return `${where} must be one of ${schema.enum.map((/** @type {unknown} */ e) => JSON.stringify(e)).join(", ")}`;
  }
  // Python counts code points; so does a model's "empty".
  if (typeof value === "string" && codePoints(value) < (schema.minLength ?? 0)) return `${where} must not be empty`;
  if (Array.isArray(value)) {
    if (value.length < (schema.minItems ?? 0)) return `${where} must have at least ${schema.minItems} item(s)`;
    if (schema.items && typeof schema.items === "object") {
      for (let i = 0; i < value.length; i++) {
        const p = problem(schema.items, value[i], `${where}[${i}]`);
        if (p) return p;
      }
    }
  }
  if (is(value, "object")) {
    const obj = /** @type {Record<string, unknown>} */ (value);
    /** @type {Record<string, any>} */
    const props = schema.properties || {};
    for (const k of schema.required || []) {
      if (!Object.hasOwn(obj, k)) return where === "arguments" ? `missing argument \`${k}\`` : `${where} lacks \`${k}\``;
    }
    if (schema.additionalProperties === false) {
      for (const k of Object.keys(obj)) {
        if (!Object.hasOwn(props, k)) return `unknown argument \`${k}\` (the arguments are ${Object.keys(props).join(", ")})`;
      }
    }
    for (const [k, v] of Object.entries(obj)) {
      if (Object.hasOwn(props, k)) {
        const p = problem(props[k], v, where === "arguments" ? `\`${k}\`` : `${where}.${k}`);
        if (p) return p;
      }
    }
  }
  return null;
}

/**
 * The number of characters of s as Python counts them (code points, not
 * UTF-16 units), so both SDKs bound and cut alike.
 * @param {string} s
 */
export function codePoints(s) {
  if (!SURROGATE.test(s)) return s.length;
  let n = 0;
  for (const _ of s) n++;
  return n;
}

const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * s[start:end] in code points, as Python slices a str.
 * @param {string} s
 * @param {number} start
 * @param {number} [end]
 */
export function slice(s, start, end) {
  if (!SURROGATE.test(s)) return s.slice(start, end);
  return Array.from(s).slice(start, end).join("");
}

/**
 * A string as Python's repr writes it, for the sentences the Python SDK
 * says with one ('run_shell').
 * @param {string} s
 */
export function pyRepr(s) {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/[\\\n\r\t]/g, (c) => ({ "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" })[c] || c);
  return q + (q === "'" ? body.replace(/'/g, "\\'") : body) + q;
}
