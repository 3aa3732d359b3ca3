// The E2B SDKs' side of `make bench` (integration/e2b_bench_test.go):
// it reads one operation a line on stdin, runs it against the gateway
// (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY) and answers a line: the
// milliseconds the SDK call took, timed here so that neither node's start
// nor the pipe is in them. What an operation leaves (a sandbox to kill)
// is cleaned up off the clock.
import { createInterface } from 'node:readline'
import { Sandbox } from '@e2b/code-interpreter'

let sbx // the sandbox runCode and run use
const ops = {
  // A create from the daemon's warm pool, then its kill, untimed.
  async create() {
    const start = performance.now()
    const s = await Sandbox.create({ timeoutMs: 300_000 })
    const ms = performance.now() - start
    await s.kill()
    return ms
  },
  async setup() {
    sbx = await Sandbox.create({ timeoutMs: 3_600_000 })
    return 0
  },
  async runCode() {
    const start = performance.now()
    const e = await sbx.runCode('1+1')
    const ms = performance.now() - start
    if (e.error || e.text !== '2') throw new Error(`runCode('1+1'): ${JSON.stringify(e)}`)
    return ms
  },
  async run() {
    const start = performance.now()
    const r = await sbx.commands.run('true')
    const ms = performance.now() - start
    if (r.exitCode !== 0) throw new Error(`commands.run('true'): ${JSON.stringify(r)}`)
    return ms
  },
  // The Connect call commands.run makes, through node's fetch without the
  // SDK: what the SDK's own layers cost beside it.
  async rawRun() {
    const body = JSON.stringify({ process: { cmd: '/bin/bash', args: ['-l', '-c', 'true'], envs: {} }, stdin: false })
    const b = Buffer.from(body)
    const msg = Buffer.alloc(5 + b.length)
    msg.writeUInt32BE(b.length, 1)
    b.copy(msg, 5)
    const start = performance.now()
    const r = await fetch(process.env.E2B_SANDBOX_URL + '/process.Process/Start', { method: 'POST', body: msg, headers: {
      'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1', 'E2b-Sandbox-Id': sbx.sandboxId,
      'E2b-Sandbox-Port': '49983', 'X-Access-Token': sbx.envdAccessToken, 'Connect-Timeout-Ms': '60000' } })
    const t = await r.text()
    const ms = performance.now() - start
    if (!t.includes('exited')) throw new Error(t)
    return ms
  },
  async close() {
    await sbx?.kill()
    sbx = undefined
    return 0
  },
}

for await (const line of createInterface({ input: process.stdin })) {
  const op = ops[line.trim()]
  try {
    if (!op) throw new Error(`no operation ${JSON.stringify(line)}`)
    process.stdout.write(`${await op()}\n`)
  } catch (err) {
    process.stdout.write(`error ${String(err?.message ?? err).replaceAll('\n', ' ')}\n`)
  }
}
