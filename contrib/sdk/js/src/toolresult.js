// ToolResult: the outcome of one tool call, and the tool-result message
// each model API takes for it.
//
// The model reads `text`: the outcome as a JSON object, bounded to a number
// of characters, since a model's context is what an agent runs out of
// first (a `pip install` or a loop that prints can write megabytes). Images
// go beside the text, in the form each API shows a model. The text is the
// Python SDK's to the character (its JSON spacing, its cutting), so a model
// sees the same from either SDK.

import { codePoints, slice } from "./toolschema.js";

/** The default bound of the text a model is given for one call: about
 * 5000 tokens, room for a traceback or a page of output. */
export const DEFAULT_MAX_CHARS = 20000;

/** Below this, the frame of an answer (status, path, an error) might not fit. */
export const MIN_MAX_CHARS = 1000;

/** What a folder's listing may hold in full; a larger one is cut to this. */
export const MAX_ENTRIES = 500;

// The fields that may be long, and which end of each to keep: both for
// output (a traceback ends it, a header starts it), the start for a file.
/** @type {Record<string, "middle" | "head">} */
const CUTTABLE = { stdout: "middle", stderr: "middle", result: "middle", traceback: "middle", content: "head" };

/**
 * @param {string} fields
 * @param {number} max
 */
const note = (fields, max) =>
  `${fields} cut to fit the ${max} characters of a tool result; for the rest, ` +
  "write it to a file and read parts of it (run_shell: head, tail, grep, sed -n)";

/**
 * v as JSON the way Python's json.dumps(ensure_ascii=False) writes it
 * (", " and ": " between items), since that is the text models are given
 * by the Python SDK.
 * @param {unknown} v
 * @returns {string}
 */
export function dumps(v) {
  if (Array.isArray(v)) return `[${v.map(dumps).join(", ")}]`;
  if (v !== null && typeof v === "object") {
    const items = Object.entries(v).filter(([, x]) => x !== undefined);
    return `{${items.map(([k, x]) => `${JSON.stringify(k)}: ${dumps(x)}`).join(", ")}}`;
  }
  return v === undefined ? "null" : JSON.stringify(v);
}

/** @param {string} s the length of s inside a JSON text: escapes make it longer */
const encLen = (s) => codePoints(dumps(s)) - 2;

/**
 * s cut to about `budget` encoded characters, with a mark saying how much went.
 * @param {string} s
 * @param {number} budget
 * @param {"middle" | "head"} mode
 */
function cut(s, budget, mode) {
  const n = codePoints(s);
  const ratio = n / Math.max(encLen(s), 1);
  const keep = Math.max(Math.trunc(budget * ratio), 0);
  const gone = n - keep;
  if (mode === "head") return `${slice(s, 0, keep)}\n[… ${gone} more characters cut]`;
  const head = Math.floor((keep * 3) / 5);
  const tail = keep - head;
  return `${slice(s, 0, head)}\n[… ${gone} characters cut …]\n${tail ? slice(s, n - tail) : ""}`;
}

/**
 * data as JSON text of at most maxChars characters, and the fields it cut.
 * The long fields share what the rest leaves, each taking no more than it
 * needs (a short stderr leaves its share to stdout).
 * @param {Record<string, any>} data
 * @param {number} maxChars
 * @returns {[string, string[]]}
 */
export function bound(data, maxChars) {
  let text = dumps(data);
  if (codePoints(text) <= maxChars) return [text, []];
  const fields = Object.keys(CUTTABLE).filter((k) => typeof data[k] === "string" && data[k]);
  /** @type {Record<string, any>} */
  const frame = { ...data };
  for (const k of fields) frame[k] = "";
  frame.note = note(fields.join(", "), maxChars);
  // Room for each field's mark of what was cut.
  let budget = maxChars - codePoints(dumps(frame)) - 48 * fields.length;
  /** @type {Record<string, number>} */
  const sizes = Object.fromEntries(fields.map((k) => [k, encLen(data[k])]));
  for (let round = 0; round < 8; round++) {
    /** @type {Record<string, number>} */
    const allot = {};
    let left = Math.max(budget, 0);
    const order = [...fields].sort((a, b) => sizes[a] - sizes[b]);
    order.forEach((k, i) => {
      allot[k] = Math.min(sizes[k], Math.floor(left / (order.length - i)));
      left -= allot[k];
    });
    const out = { ...data };
    const cutFields = fields.filter((k) => allot[k] < sizes[k]);
    for (const k of cutFields) out[k] = cut(data[k], allot[k], CUTTABLE[k]);
    out.note = note(cutFields.join(", ") || "output", maxChars);
    text = dumps(out);
    const len = codePoints(text);
    if (len <= maxChars) return [text, cutFields];
    if (budget <= 0) break;
    // Escapes are denser in some parts than the average the cut took.
    budget -= len - maxChars + 16;
  }
  // Only what is never cut is left too long (a long path or message): the
  // text is cut as it is, no longer JSON, rather than sent whole.
  const mark = `\n[… cut to ${maxChars} characters]`;
  return [slice(text, 0, maxChars - codePoints(mark)) + mark, ["text"]];
}

/** @param {import("./models.js").Output} o */
const dataUrl = (o) => `data:${o.mime};base64,${o.data}`;

/**
 * The outcome of one tool call.
 *
 * `data` is the whole answer as the model is told it, uncut; `text` is it
 * as JSON, bounded for the model; `images` the images the call made
 * (matplotlib figures, as base64 PNG). `isError` is set when the tool
 * failed: unknown tool or bad arguments (`errorCode` "unknown_tool",
 * "invalid_argument"), a daemon error (its contract code, e.g. "conflict"),
 * or code that raised, exited non-zero, timed out or was killed. `cut`
 * names the fields `text` had to cut. `execution` is the daemon's
 * Execution, if one ran; `exception` what was thrown, for a caller that
 * wants to rethrow it. `callId` is the id of the model's call, which the
 * to* messages answer.
 */
export class ToolResult {
  /**
   * @param {{name: string, data: Record<string, any>, text: string, isError?: boolean,
   *          images?: import("./models.js").Output[], errorCode?: string | null, callId?: string | null,
   *          cut?: string[], execution?: import("./models.js").Execution | null, exception?: unknown}} f
   */
  constructor(f) {
    this.name = f.name;
    this.data = f.data;
    this.text = f.text;
    this.isError = f.isError ?? false;
    this.images = f.images ?? [];
    /** @type {string | null} */
    this.errorCode = f.errorCode ?? null;
    /** @type {string | null} */
    this.callId = f.callId ?? null;
    this.cut = f.cut ?? [];
    this.execution = f.execution ?? null;
    /** @type {unknown} */
    this.exception = f.exception ?? null;
  }

  /** @param {string | null | undefined} callId */
  _id(callId) {
    const cid = callId ?? this.callId;
    if (!cid) throw new TypeError(`no call id for the result of ${this.name}: pass the id of the model's tool call`);
    return cid;
  }

  /**
   * The Chat Completions message answering the call. Its content is text
   * only, as the API allows; openaiImagesMessage carries the images.
   * @param {string | null} [callId]
   */
  toOpenAI(callId) {
    return { role: /** @type {const} */ ("tool"), tool_call_id: this._id(callId), content: this.text };
  }

  /**
   * The Responses API's function_call_output item: the text, or with
   * images a list of input_text and input_image parts.
   * @param {string | null} [callId]
   */
  toOpenAIResponses(callId) {
    const cid = this._id(callId);
    if (!this.images.length) return { type: /** @type {const} */ ("function_call_output"), call_id: cid, output: this.text };
    /** @type {Array<Record<string, string>>} */
    const parts = [{ type: "input_text", text: this.text }];
    for (const o of this.images) parts.push({ type: "input_image", image_url: dataUrl(o), detail: "auto" });
    return { type: /** @type {const} */ ("function_call_output"), call_id: cid, output: parts };
  }

  /**
   * The Messages API's tool_result block (all of one turn's go in one user
   * message), images as image blocks.
   * @param {string | null} [toolUseId]
   */
  toAnthropic(toolUseId) {
    /** @type {Array<Record<string, any>>} */
    const content = [{ type: "text", text: this.text }];
    for (const o of this.images) content.push({ type: "image", source: { type: "base64", media_type: o.mime, data: o.data } });
    return { type: /** @type {const} */ ("tool_result"), tool_use_id: this._id(toolUseId), content, is_error: this.isError };
  }

  /**
   * A Chat Completions user message showing the images, null without any.
   * Tool messages hold text alone, and every tool message must follow its
   * assistant message at once: append this after them.
   */
  openaiImagesMessage() {
    if (!this.images.length) return null;
    /** @type {Array<Record<string, any>>} */
    const parts = [{ type: "text", text: `The images made by the ${this.name} call ${this.callId || ""}`.trimEnd() + ":" }];
    for (const o of this.images) parts.push({ type: "image_url", image_url: { url: dataUrl(o) } });
    return { role: /** @type {const} */ ("user"), content: parts };
  }

  /** What a framework that stores results (a LangGraph checkpoint) keeps: no Execution, no Error. */
  toJSON() {
    return {
      name: this.name,
      data: this.data,
      text: this.text,
      isError: this.isError,
      images: this.images.map((o) => ({ mime: o.mime, data: o.data })),
      errorCode: this.errorCode,
      callId: this.callId,
      cut: this.cut,
    };
  }
}
