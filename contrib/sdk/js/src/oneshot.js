// run: code run once in a fresh sandbox that is gone afterwards (POST /v1/run).

import { Client } from "./client.js";

/**
 * Runs code ("python" or "shell", the option `language`) once in a fresh
 * sandbox, with `files` (path: content) written into it first; the sandbox
 * and its files are gone afterwards. `timeoutS` is the execution's, in
 * whole seconds (a fraction is rounded up); the other options are the
 * fields of a create, and `socket`, `client`, `requestTimeoutMs`, `signal`.
 *
 *     console.log((await run("print(1)")).stdout);
 *
 * @param {string} code
 * @param {Record<string, any> & {socket?: string, client?: Client}} [opts]
 */
export function run(code, opts = {}) {
  const { socket, client, ...rest } = opts;
  const c = client || new Client({ socket });
  return c.run(code, rest);
}
