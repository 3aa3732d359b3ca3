// Folders as tar streams, both ways (files.uploadDir, files.downloadDir),
// with no dependency: a writer of ustar headers (PAX records where a name,
// a link target or a size does not fit) and a reader of what the daemon's
// Go archive/tar writes (ustar, PAX; GNU long names too).
//
// The daemon moves a folder as a tar stream whose entries are under the
// folder's own name (cp -r): folders, regular files and symlinks, a symlink
// as a link and never followed.
//
// Unpacking writes nothing outside the local folder: names that are
// absolute or hold ".." are refused; every folder on an entry's path is
// looked at with lstat and made if missing, and one that is a symlink (or
// a file) is refused, so nothing is written through a link, wherever it
// points; a file or a link is made under a temporary name (O_EXCL,
// O_NOFOLLOW) and renamed over what was at its name, so a symlink there is
// replaced, never followed. Node has no openat, so this guards against
// what the stream holds, not against another local process changing the
// folder meanwhile. Modes lose setuid, setgid and sticky bits and group or
// other write (tarfile's "data" filter's rule); owners are never set.

import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";

import { ProtocolError } from "./errors.js";

const BLOCK = 512;
const CHUNK = 1 << 16;
// ustar's numeric fields hold 11 octal digits: sizes up to 8 GiB - 1.
const MAX_OCTAL_SIZE = 0o77777777777;

let seq = 0;

/**
 * An error of the local file system's kind, as node:fs names them.
 * @param {string} code
 * @param {string} message
 * @param {string} [p]
 */
function fsError(code, message, p) {
  const err = /** @type {Error & {code: string, path?: string}} */ (new Error(p ? `${code}: ${message}, '${p}'` : `${code}: ${message}`));
  err.code = code;
  if (p) err.path = p;
  return err;
}

// Writing.

/**
 * A PAX record: "LEN key=value\n", LEN counting itself.
 * @param {string} key
 * @param {string} value
 */
function paxRecord(key, value) {
  const body = Buffer.byteLength(key) + Buffer.byteLength(value) + 3; // " ", "=", "\n"
  let len = body + String(body).length;
  if (String(len).length !== String(body).length) len = body + String(len).length;
  return `${len} ${key}=${value}\n`;
}

/**
 * One 512-byte ustar header.
 * @param {{name: string, mode: number, size: number, mtime: number, type: string, linkname?: string}} h
 */
function ustarHeader(h) {
  const b = Buffer.alloc(BLOCK);
  b.write(h.name, 0, 100, "utf8");
  b.write(octal(h.mode & 0o7777, 7), 100, "ascii");
  b.write(octal(0, 7), 108, "ascii"); // uid: the daemon makes everything the sandbox user's
  b.write(octal(0, 7), 116, "ascii"); // gid
  b.write(octal(h.size, 11), 124, "ascii");
  b.write(octal(Math.max(0, Math.min(h.mtime, MAX_OCTAL_SIZE)), 11), 136, "ascii");
  b.write(" ".repeat(8), 148, "ascii"); // the checksum counts its own field as spaces
  b.write(h.type, 156, "ascii");
  if (h.linkname) b.write(h.linkname, 157, 100, "utf8");
  b.write("ustar\u000000", 257, "ascii");
  let sum = 0;
  for (const x of b) sum += x;
  b.write(sum.toString(8).padStart(6, "0") + "\u0000 ", 148, "ascii");
  return b;
}

/** @param {number} n @param {number} width digits, then a NUL */
function octal(n, width) {
  return n.toString(8).padStart(width, "0") + "\u0000";
}

/** Whether s fits a ustar field of `max` bytes as it is. @param {string} s @param {number} max */
function fits(s, max) {
  // eslint-disable-next-line no-control-regex
  return Buffer.byteLength(s) <= max && /^[\x01-\x7f]*$/.test(s);
}

/**
 * The headers of one entry: a PAX header first when a name, link target or
 * size does not fit ustar's fields.
 * @param {{name: string, mode: number, size: number, mtime: number, type: string, linkname?: string}} h
 */
export function tarHeader(h) {
  let pax = "";
  if (!fits(h.name, 100)) pax += paxRecord("path", h.name);
  if (h.linkname && !fits(h.linkname, 100)) pax += paxRecord("linkpath", h.linkname);
  if (h.size > MAX_OCTAL_SIZE) pax += paxRecord("size", String(h.size));
  const main = ustarHeader({ ...h, name: fits(h.name, 100) ? h.name : asciiCut(h.name), size: Math.min(h.size, MAX_OCTAL_SIZE), linkname: h.linkname && (fits(h.linkname, 100) ? h.linkname : asciiCut(h.linkname)) });
  if (!pax) return main;
  const data = Buffer.from(pax, "utf8");
  const xh = ustarHeader({ name: asciiCut(`PaxHeaders/${path.posix.basename(h.name)}`), mode: 0o644, size: data.length, mtime: h.mtime, type: "x" });
  return Buffer.concat([xh, data, padding(data.length), main]);
}

/** A stand-in for a name the PAX record holds: ASCII, at most 100 bytes. @param {string} s */
function asciiCut(s) {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[^\x01-\x7f]/g, "_").slice(-100);
}

/** @param {number} n */
function padding(n) {
  return Buffer.alloc((BLOCK - (n % BLOCK)) % BLOCK);
}

/**
 * The local folder `local` as a tar stream, its entries under its own name:
 * folders, regular files, symlinks as links; anything else (a device, a
 * fifo, a socket) left out. A file that changes while it is read is cut or
 * padded to the size its header said, so the stream stays whole. A folder
 * that is not there rejects before anything is made.
 * @param {string} local
 * @returns {Promise<AsyncGenerator<Buffer>>}
 */
export async function packDir(local) {
  const top = path.resolve(local);
  const st = await fsp.stat(top);
  if (!st.isDirectory()) throw fsError("ENOTDIR", "not a folder: upload a file with files.write", local);
  const base = path.basename(top) || "root";
  return (async function* () {
    yield* packEntry(top, base);
    yield Buffer.alloc(2 * BLOCK);
  })();
}

/**
 * @param {string} p
 * @param {string} name
 * @returns {AsyncGenerator<Buffer>}
 */
async function* packEntry(p, name) {
  const st = await fsp.lstat(p);
  const base = { name, mode: st.mode & 0o7777, mtime: Math.floor(st.mtimeMs / 1000), size: 0 };
  if (st.isSymbolicLink()) {
    yield tarHeader({ ...base, type: "2", linkname: await fsp.readlink(p) });
  } else if (st.isDirectory()) {
    yield tarHeader({ ...base, name: name + "/", type: "5" });
    for (const n of (await fsp.readdir(p)).sort()) yield* packEntry(path.join(p, n), `${name}/${n}`);
  } else if (st.isFile()) {
    const size = st.size;
    const fh = await fsp.open(p, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0));
    try {
      yield tarHeader({ ...base, type: "0", size });
      let left = size;
      while (left > 0) {
        const buf = Buffer.alloc(Math.min(CHUNK, left));
        const { bytesRead } = await fh.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        left -= bytesRead;
        yield buf.subarray(0, bytesRead);
      }
      if (left > 0) yield Buffer.alloc(left);
      yield padding(size);
    } finally {
      await fh.close();
    }
  }
}

// Reading.

/** Bytes of an iterable of chunks (async or not), read as asked. */
class ByteReader {
  /** @param {AsyncIterable<Uint8Array> | Iterable<Uint8Array>} src */
  constructor(src) {
    /** @type {AsyncIterator<Uint8Array> | Iterator<Uint8Array>} */
    this._it = Symbol.asyncIterator in src ? src[Symbol.asyncIterator]() : src[Symbol.iterator]();
    /** @type {Buffer} */
    this._buf = Buffer.alloc(0);
    this._done = false;
    /** Bytes handed out so far. */
    this.offset = 0;
  }

  async _fill() {
    if (this._done) return false;
    const next = await this._it.next();
    if (next.done) {
      this._done = true;
      return false;
    }
    const c = Buffer.from(next.value);
    this._buf = this._buf.length ? Buffer.concat([this._buf, c]) : c;
    return true;
  }

  /**
   * Up to n bytes: fewer only at the end of the stream.
   * @param {number} n
   */
  async read(n) {
    while (this._buf.length < n && (await this._fill()));
    const out = this._buf.subarray(0, n);
    this._buf = this._buf.subarray(out.length);
    this.offset += out.length;
    return out;
  }

  /**
   * n bytes in pieces as they come (never all held at once).
   * @param {number} n
   * @returns {AsyncGenerator<Buffer>}
   */
  async *pieces(n) {
    let left = n;
    while (left > 0) {
      if (!this._buf.length && !(await this._fill())) throw new ProtocolError("the tar stream from sandboxd was cut in the middle of a file");
      const out = this._buf.subarray(0, Math.min(left, this._buf.length));
      this._buf = this._buf.subarray(out.length);
      this.offset += out.length;
      left -= out.length;
      yield out;
    }
  }

  /** Drops what is left of the stream. */
  async drain() {
    this._buf = Buffer.alloc(0);
    while (await this._fill()) this._buf = Buffer.alloc(0);
  }
}

/** @param {Buffer} b @param {number} off @param {number} len */
function field(b, off, len) {
  const f = b.subarray(off, off + len);
  const nul = f.indexOf(0);
  return (nul >= 0 ? f.subarray(0, nul) : f).toString("utf8");
}

/** A numeric field: octal, or base-256 for large values. @param {Buffer} b @param {number} off @param {number} len */
function numeric(b, off, len) {
  if (b[off] & 0x80) {
    let n = b[off] & 0x7f;
    for (let i = 1; i < len; i++) n = n * 256 + b[off + i];
    return n;
  }
  const s = field(b, off, len).trim();
  return s ? parseInt(s, 8) : 0;
}

/** @param {Buffer} data */
function parsePax(data) {
  /** @type {Record<string, string>} */
  const out = {};
  let i = 0;
  while (i < data.length) {
    const sp = data.indexOf(0x20, i);
    if (sp < 0) break;
    const len = parseInt(data.subarray(i, sp).toString("ascii"), 10);
    if (!(len > 0) || i + len > data.length) throw new ProtocolError("a bad PAX record in the tar stream from sandboxd");
    const rec = data.subarray(sp + 1, i + len - 1).toString("utf8");
    const eq = rec.indexOf("=");
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    i += len;
  }
  return out;
}

/**
 * @typedef {{name: string, type: string, size: number, mode: number, mtime: number, linkname: string}} TarEntry
 */

/**
 * The entries of a tar stream, each with its data to read before the next
 * (`read`, in pieces); ends at the tar's end (a zero block), and a stream
 * that ends before it is a ProtocolError.
 * @param {AsyncIterable<Uint8Array> | Iterable<Uint8Array>} src
 * @returns {AsyncGenerator<TarEntry & {data: () => AsyncGenerator<Buffer>}>}
 */
export async function* readTar(src) {
  const r = new ByteReader(src);
  /** @type {Record<string, string>} */
  let pax = {};
  let longName = "";
  let longLink = "";
  for (;;) {
    const h = await r.read(BLOCK);
    if (h.length === 0) throw new ProtocolError("the tar stream from sandboxd stopped before its end: the copy is partial");
    if (h.length < BLOCK) throw new ProtocolError("the tar stream from sandboxd was cut in the middle of a header");
    if (h.every((x) => x === 0)) {
      // The end. What follows (a second zero block, a record's padding)
      // is read and dropped so the connection ends cleanly.
      await r.drain();
      return;
    }
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i];
    if (numeric(h, 148, 8) !== sum) throw new ProtocolError("a tar header from sandboxd has a bad checksum: not a tar stream, or a broken one");
    const type = String.fromCharCode(h[156] || 0x30);
    let size = numeric(h, 124, 12);
    if (type === "x" || type === "g" || type === "L" || type === "K") {
      const chunks = [];
      for await (const p of r.pieces(size)) chunks.push(Buffer.from(p));
      for await (const _ of r.pieces((BLOCK - (size % BLOCK)) % BLOCK));
      const data = Buffer.concat(chunks);
      if (type === "x") pax = { ...pax, ...parsePax(data) };
      else if (type === "L") longName = field(data, 0, data.length);
      else if (type === "K") longLink = field(data, 0, data.length);
      // "g", global records, name nothing this reader keeps.
      continue;
    }
    let name = field(h, 0, 100);
    const prefix = h.subarray(257, 262).toString("ascii") === "ustar" ? field(h, 345, 155) : "";
    if (prefix) name = `${prefix}/${name}`;
    if (longName) name = longName;
    if (pax.path !== undefined) name = pax.path;
    let linkname = longLink || field(h, 157, 100);
    if (pax.linkpath !== undefined) linkname = pax.linkpath;
    if (pax.size !== undefined) size = Number(pax.size);
    const mtime = pax.mtime !== undefined ? Number(pax.mtime) : numeric(h, 136, 12);
    pax = {};
    longName = longLink = "";
    let read = false;
    const body = async function* () {
      read = true;
      yield* r.pieces(size);
    };
    yield { name, type: type === "\u0000" ? "0" : type, size, mode: numeric(h, 100, 8), mtime, linkname, data: body };
    if (!read) for await (const _ of r.pieces(size));
    for await (const _ of r.pieces((BLOCK - (size % BLOCK)) % BLOCK));
  }
}

/**
 * An entry's path as its components; none for the folder itself. Absolute
 * names and ".." are refused: they would leave the folder.
 * @param {string} name
 */
function parts(name) {
  if (name.startsWith("/") || name.startsWith("\\")) {
    throw new ProtocolError(`the tar entry ${JSON.stringify(name)} is absolute: refused, it would be written outside the folder`);
  }
  const out = name.split("/").filter((p) => p !== "" && p !== ".");
  if (out.includes("..")) throw new ProtocolError(`the tar entry ${JSON.stringify(name)} holds '..': refused, it could be written outside the folder`);
  if (out.some((p) => p.includes("\u0000"))) throw new ProtocolError(`the tar entry ${JSON.stringify(name)} holds a NUL byte`);
  return out;
}

/**
 * The mode tarfile's data filter gives a file: no setuid, setgid or sticky
 * bit, no group or other write, executable only if the owner could,
 * readable and writable by the owner.
 * @param {number} mode
 */
export function fileMode(mode) {
  let m = mode & 0o755;
  if (!(m & 0o100)) m &= ~0o111;
  return m | 0o600;
}

/**
 * The folder dest/parts..., each made as needed; a symlink or a file where a
 * folder must be is refused, but for the last of a folder's own entry
 * (`lastReplaces`): the tar says a folder is there, so it replaces it.
 * @param {string} dest
 * @param {string[]} ps
 * @param {boolean} [lastReplaces]
 */
async function dirs(dest, ps, lastReplaces = false) {
  let p = dest;
  for (let i = 0; i < ps.length; i++) {
    p = path.join(p, ps[i]);
    /** @type {fs.Stats | null} */
    let st = null;
    try {
      st = await fsp.lstat(p);
    } catch (err) {
      if (/** @type {any} */ (err).code !== "ENOENT") throw err;
    }
    if (st && st.isDirectory()) continue;
    if (st) {
      if (!(lastReplaces && i === ps.length - 1)) {
        throw fsError("ENOTDIR", "not a folder (a symlink or a file): nothing is written through it, remove it first", p);
      }
      await fsp.unlink(p);
    }
    try {
      await fsp.mkdir(p, 0o755);
    } catch (err) {
      if (/** @type {any} */ (err).code !== "EEXIST") throw err;
      if (!(await fsp.lstat(p)).isDirectory()) throw fsError("ENOTDIR", "not a folder: nothing is written through it", p);
    }
  }
  return p;
}

/**
 * Makes an entry under a temporary name in dir, then renames it to name:
 * what was there (a file, a symlink) is replaced as a whole, a symlink
 * there never followed. A folder there stays, and is an error.
 * @param {string} dir
 * @param {string} name
 * @param {(tmp: string) => Promise<void>} make
 */
async function replace(dir, name, make) {
  const tmp = path.join(dir, `.${name.slice(0, 200)}.sandboxd-${process.pid}-${++seq}`);
  await make(tmp);
  try {
    await fsp.rename(tmp, path.join(dir, name));
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    const code = /** @type {any} */ (err).code;
    if (code === "EISDIR" || code === "ENOTEMPTY" || code === "EEXIST") {
      throw fsError("EISDIR", "a folder is where the copy has a file or a link: remove it first", path.join(dir, name));
    }
    throw err;
  }
}

/**
 * Unpacks a tar stream into the local folder `dest` (made as needed) and
 * resolves to the paths it wrote, folders included. Nothing is written
 * outside dest, by a name or through a symlink (see above). An entry whose
 * name leaves dest, or a stream that ends before the tar's end, is a
 * ProtocolError; a file that cannot be written rejects with its error.
 * Kinds other than folders, files and symlinks are skipped.
 * @param {AsyncIterable<Uint8Array> | Iterable<Uint8Array>} src
 * @param {string} dest
 * @returns {Promise<string[]>}
 */
export async function extractTar(src, dest) {
  await fsp.mkdir(dest, { recursive: true });
  /** @type {string[]} */
  const written = [];
  for await (const e of readTar(src)) {
    const ps = parts(e.name);
    if (!ps.length) continue;
    const name = ps[ps.length - 1];
    if (e.type === "5") {
      await dirs(dest, ps, true);
    } else if (e.type === "0" || e.type === "7") {
      const dir = await dirs(dest, ps.slice(0, -1));
      await replace(dir, name, async (tmp) => {
        const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | (fs.constants.O_NOFOLLOW ?? 0);
        const fh = await fsp.open(tmp, flags, 0o600);
        try {
          for await (const piece of e.data()) await fh.write(piece);
          await fh.chmod(fileMode(e.mode));
          if (e.mtime) await fh.utimes(e.mtime, e.mtime);
        } catch (err) {
          await fh.close();
          await fsp.rm(tmp, { force: true });
          throw err;
        }
        await fh.close();
      });
    } else if (e.type === "2") {
      const dir = await dirs(dest, ps.slice(0, -1));
      await replace(dir, name, (tmp) => fsp.symlink(e.linkname, tmp));
    } else {
      continue;
    }
    written.push(path.join(dest, ...ps));
  }
  return written;
}
