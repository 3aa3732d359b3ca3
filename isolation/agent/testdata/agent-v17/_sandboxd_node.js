'use strict'
// sandboxd agent: the JavaScript worker, a node process the supervisor
// starts for a javascript context (see _sandboxd_cells, Worker.start). It
// speaks the Python worker's protocol: a request a line on fd 710
// ({code, env, cwd, noop, seq, token}), its reply a line on fd 711 with
// the request's seq and token ({result?, error?}), what the code prints on
// fds 1 and 2, which the supervisor reads. Cells run in this process's
// global scope (vm.runInThisContext), so their globals persist; a cell
// whose last expression is a promise is awaited, and one that uses await
// at its top runs in an async function (its own declarations stay its
// own). Requests are read as the event loop reads anything, so code's
// timers and servers run between cells. Nothing here is trusted by the
// supervisor: it checks seq and token as it does the Python worker's.
const fs = require('fs')
const vm = require('vm')
const util = require('util')

const REQ = 710
const REP = 711
for (const fd of [712, 713, 714]) {
  try { fs.closeSync(fd) } catch (_) {}
}

function reply (msg) {
  const data = Buffer.from('\n' + JSON.stringify(msg) + '\n')
  let off = 0
  while (off < data.length) {
    try {
      off += fs.writeSync(REP, data, off)
    } catch (e) {
      if (e.code !== 'EAGAIN') process.exit(1)
    }
  }
}

function errorOf (e) {
  if (e instanceof Error) {
    return { name: e.name || 'Error', value: e.message || '', traceback: e.stack || '' }
  }
  return { name: 'Error', value: util.inspect(e), traceback: '' }
}

const MAX_RESULT = 1 << 20

function compiles (code) {
  try {
    new vm.Script(code) // eslint-disable-line no-new
    return true
  } catch (e) {
    return false
  }
}

// asyncCell is a cell with await at its top as an async function that
// returns its last expression's value where it can tell which that is:
// the whole cell, or its last line.
function asyncCell (code) {
  const whole = '(async () => (\n' + code + '\n))()'
  if (compiles(whole)) return whole
  const lines = code.replace(/\s+$/, '').split('\n')
  const last = lines.pop().replace(/;\s*$/, '')
  const split = '(async () => {\n' + lines.join('\n') + '\nreturn (\n' + last + '\n)\n})()'
  if (compiles(split)) return split
  return '(async () => {\n' + code + '\n})()'
}

async function run (req) {
  if (req.noop) return {}
  const env = req.env || {}
  const saved = {}
  for (const k of Object.keys(env)) {
    saved[k] = process.env[k]
    process.env[k] = String(env[k])
  }
  const cwd = process.cwd()
  try {
    if (req.cwd) process.chdir(req.cwd)
    let code = String(req.code || '')
    if (/\bawait\b/.test(code) && !compiles(code)) code = asyncCell(code)
    let value = vm.runInThisContext(code, { filename: '<cell>', displayErrors: false })
    if (value && typeof value.then === 'function') value = await value
    if (value === undefined) return {}
    let text = util.inspect(value)
    if (text.length > MAX_RESULT) text = text.slice(0, MAX_RESULT)
    return { result: text }
  } catch (e) {
    return { error: errorOf(e) }
  } finally {
    try { process.chdir(cwd) } catch (_) {}
    for (const k of Object.keys(saved)) {
      if (saved[k] === undefined) delete process.env[k]
      else process.env[k] = saved[k]
    }
  }
}

let buf = ''
let busy = Promise.resolve()
const input = fs.createReadStream(null, { fd: REQ, encoding: 'utf8' })
input.on('data', (chunk) => {
  buf += chunk
  let nl
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl)
    buf = buf.slice(nl + 1)
    let req
    try {
      req = JSON.parse(line)
    } catch (_) {
      continue // an empty line: an acknowledgement nobody waits for
    }
    busy = busy.then(async () => {
      const msg = await run(req)
      msg.seq = req.seq
      msg.token = req.token
      reply(msg)
    })
  }
})
input.on('end', () => process.exit(0))
// A rejection or exception nobody caught, after its cell: printed as
// node would, and the worker lives on.
process.on('unhandledRejection', (e) => { console.error('Uncaught (in promise)', e) })
process.on('uncaughtException', (e) => { console.error('Uncaught', e) })
