// sbx.files: files in and out of a sandbox, as E2B's Sandbox.files.
//
// Paths are inside the sandbox: a relative one is taken from /workspace, and
// only /workspace and /tmp are served (anything else is InvalidArgument).
// Folders travel as tar streams, as `sandboxctl cp -r` sends them.

import path from "node:path";

import { NotFound } from "./errors.js";
import { extractTar, packDir } from "./tar.js";

/**
 * An error of the file's kind, as node:fs names them (EISDIR, ENOTDIR):
 * the daemon answered, but not with what the call is for.
 * @param {string} code
 * @param {string} message
 */
function fsError(code, message) {
  const err = /** @type {Error & {code: string}} */ (new Error(message));
  err.code = code;
  return err;
}

/** The files of its sandbox's session. */
export class Files {
  /** @param {import("./sandbox.js").Sandbox} sandbox */
  constructor(sandbox) {
    this._sbx = sandbox;
  }

  /**
   * Writes a file (a string as UTF-8; a Readable or an async iterable of
   * bytes is streamed), making its parent folders; `metadata` (lower-case
   * keys) is its user metadata, which stat and list answer.
   * @param {string} path
   * @param {import("./transport.js").Body} data
   * @param {{metadata?: Record<string, string>} & import("./client.js").CallOptions} [opts]
   */
  write(path, data, opts) {
    return this._sbx.client.putFile(this._sbx.id, path, data, opts);
  }

  /**
   * A file's bytes, or with an encoding ("utf8", or {encoding}) its text.
   * @param {string} path
   * @param {BufferEncoding | ({encoding?: BufferEncoding} & import("./client.js").CallOptions)} [opts]
   * @returns {Promise<any>}
   */
  async read(path, opts) {
    const o = typeof opts === "string" ? { encoding: opts } : opts || {};
    const got = await this._sbx.client.getFile(this._sbx.id, path, o);
    if (!Buffer.isBuffer(got)) {
      throw fsError("EISDIR", `${path} is a folder in session ${this._sbx.id}: list it with files.list`);
    }
    return o.encoding ? got.toString(o.encoding) : got;
  }

  /**
   * A file's text.
   * @param {string} path
   * @param {BufferEncoding} [encoding]
   */
  readText(path, encoding = "utf8") {
    return this.read(path, { encoding });
  }

  /**
   * The entries of a folder (default /workspace); with `depth` > 1, those
   * of the folders in it too, to that many levels, each with its whole
   * `path` (at most 16 levels and 10000 entries).
   * @param {string} [path]
   * @param {{depth?: number} & import("./client.js").CallOptions} [opts]
   */
  async list(path = ".", opts) {
    if (opts && opts.depth !== undefined && opts.depth !== 1) {
      return this._sbx.client.listFolder(this._sbx.id, path, opts.depth, opts);
    }
    const got = await this._sbx.client.getFile(this._sbx.id, path, opts);
    if (Buffer.isBuffer(got)) {
      throw fsError("ENOTDIR", `${path} is a file in session ${this._sbx.id}: read it with files.read`);
    }
    return got;
  }

  /**
   * A file, folder or symlink (never followed): type, size, mode,
   * permissions, owner and group as the sandbox names them, mtime.
   * @param {string} path @param {import("./client.js").CallOptions} [opts]
   */
  stat(path, opts) {
    return this._sbx.client.statFile(this._sbx.id, path, opts);
  }

  /**
   * Makes a folder and those above it (mkdir -p); `created` says whether
   * it was new.
   * @param {string} path @param {import("./client.js").CallOptions} [opts]
   */
  mkdir(path, opts) {
    return this._sbx.client.makeFolder(this._sbx.id, path, opts);
  }

  /**
   * Renames a file or folder within /workspace or within /tmp; never
   * replaces (Conflict if `to` exists). Resolves to `to`'s stat.
   * @param {string} from @param {string} to @param {import("./client.js").CallOptions} [opts]
   */
  move(from, to, opts) {
    return this._sbx.client.moveFile(this._sbx.id, from, to, opts);
  }

  /**
   * The changes in a folder as they happen, an async generator: it ends
   * when the session's sandbox or the folder goes; leave the `for await`
   * (or abort `signal`) to stop.
   * @param {string} [path]
   * @param {{recursive?: boolean} & import("./client.js").CallOptions} [opts]
   */
  watch(path = ".", opts) {
    return this._sbx.client.watchFiles(this._sbx.id, path, opts);
  }

  /**
   * Removes a file, or a folder with its contents.
   * @param {string} path
   * @param {import("./client.js").CallOptions} [opts]
   */
  async remove(path, opts) {
    await this._sbx.client.deleteFile(this._sbx.id, path, opts);
  }

  /**
   * Copies the local folder `local` into the sandbox's folder `remote`
   * (default ".", /workspace) as cp -r does: it lands as remote/NAME (NAME
   * is local's own name; remote is made as needed), with its folders, files
   * and symlinks (as links, never followed; devices, fifos and sockets are
   * left out). It streams: the folder is never held whole. Resolves to the
   * folder it landed in, the files' total size and their number (`files`).
   * A local file that cannot be read rejects with its own error; what was
   * sent before it stays in the sandbox.
   * @param {string} local
   * @param {string} [remote]
   * @param {import("./client.js").CallOptions} [opts]
   */
  async uploadDir(local, remote = ".", opts) {
    const packed = await packDir(local);
    /** @type {unknown} */
    let failed = null;
    async function* body() {
      try {
        yield* packed;
      } catch (err) {
        // Thrown inside the upload, it would be taken for the daemon's
        // failure: the caller gets the local error itself.
        failed = err;
        throw err;
      }
    }
    try {
      return await this._sbx.client.putTar(this._sbx.id, remote, body(), opts);
    } catch (err) {
      throw failed ?? err;
    }
  }

  /**
   * Copies the sandbox's folder `remote` (or a file) into the local folder
   * `local` (default ".", made as needed) as cp -r does: it lands as
   * local/NAME. Resolves to the local paths it wrote. Nothing is written
   * outside `local`: an entry named outside it is refused (ProtocolError),
   * nothing is written through a symlink (one where a folder must be is an
   * ENOTDIR error), and symlinks are made as links, wherever they point.
   * What was at a name is replaced; a folder merges. A copy cut short (the
   * folder changed as it was read) is a ProtocolError, with part of it
   * written.
   * @param {string} remote
   * @param {string} [local]
   * @param {import("./client.js").CallOptions} [opts]
   * @returns {Promise<string[]>}
   */
  async downloadDir(remote, local = ".", opts) {
    const stream = await this._sbx.client.getTar(this._sbx.id, remote, opts);
    try {
      return await extractTar(stream, local);
    } finally {
      stream.destroy();
    }
  }

  /**
   * Whether path exists, found in its folder's listing (a file is not
   * downloaded to tell).
   * @param {string} p
   * @param {import("./client.js").CallOptions} [opts]
   */
  async exists(p, opts) {
    const norm = path.posix.resolve("/workspace", p);
    if (norm === "/workspace" || norm === "/tmp") return true;
    const parent = path.posix.dirname(norm);
    const name = path.posix.basename(norm);
    let entries;
    try {
      entries = await this.list(parent, opts);
    } catch (err) {
      if (err instanceof NotFound || (err && /** @type {any} */ (err).code === "ENOTDIR")) return false;
      throw err;
    }
    return entries.some((e) => e.name === name);
  }
}
