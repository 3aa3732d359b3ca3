// What the tests against a real sandboxd (*.sdk.test.js) share: they skip
// without $SANDBOXD_SOCKET (integration/sdk_javascript_test.go sets it),
// and each sandbox they make is labelled with this run and deleted after.

import { randomBytes } from "node:crypto";

import { Sandbox } from "sandboxd";

export const RUN = randomBytes(6).toString("hex");

export const skip = process.env.SANDBOXD_SOCKET
  ? false
  : "SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_javascript_test.go starts one)";

/**
 * withSandbox runs fn with a new sandbox, deleted afterwards.
 * @template T
 * @param {(sbx: Sandbox) => Promise<T>} fn
 */
export async function withSandbox(fn) {
  const sbx = await Sandbox.create({ labels: { run: RUN } });
  try {
    return await fn(sbx);
  } finally {
    await sbx[Symbol.asyncDispose]();
  }
}
