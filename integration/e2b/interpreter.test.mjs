// The code interpreter, driven by E2B's @e2b/code-interpreter (pinned)
// against sandboxd's gateway (see sandboxes.test.mjs for the setting).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'

test('runCode: state, streams, results, errors, bash', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  try {
    assert.equal((await sbx.getInfo()).templateId, 'code-interpreter-v1')
    let exec = await sbx.runCode('x = 1 + 1\nx')
    assert.equal(exec.text, '2')
    exec = await sbx.runCode('x * 3')
    assert.equal(exec.text, '6', 'the interpreter keeps its state')
    exec = await sbx.runCode('import os, getpass\n(getpass.getuser(), os.getcwd(), os.environ["HOME"])')
    assert.equal(exec.text, "('user', '/home/user', '/home/user')", "E2B's user, at home")

    const seen = []
    exec = await sbx.runCode('import sys\nprint("out")\nprint("err", file=sys.stderr)', {
      onStdout: (m) => seen.push(['out', m.line]),
      onStderr: (m) => seen.push(['err', m.line]),
    })
    assert.deepEqual(exec.logs, { stdout: ['out\n'], stderr: ['err\n'] })
    assert.deepEqual(seen.sort(), [['err', 'err\n'], ['out', 'out\n']])

    exec = await sbx.runCode('1 / 0')
    assert.equal(exec.error.name, 'ZeroDivisionError')
    assert.match(exec.error.traceback, /ZeroDivisionError/)

    exec = await sbx.runCode(
      'class Rich:\n    def _repr_html_(self):\n        return "<b>rich</b>"\n    def __repr__(self):\n        return "Rich()"\nRich()'
    )
    const main = exec.results.find((r) => r.isMainResult)
    assert.equal(main.html, '<b>rich</b>')
    assert.equal(main.text, 'Rich()')

    exec = await sbx.runCode('display({"a": 1})\n"last"')
    assert.equal(exec.results.length, 2)
    assert.equal(exec.results[0].isMainResult, false)
    assert.equal(exec.text, "'last'")

    exec = await sbx.runCode('echo "$GREETING from bash"', { language: 'bash', envs: { GREETING: 'hello' } })
    assert.deepEqual(exec.logs.stdout, ['hello from bash\n'])
  } finally {
    await sbx.kill()
  }
})

test('runCode: a request that gives up interrupts the code', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  try {
    const started = Date.now()
    await assert.rejects(sbx.runCode('import time\nfor i in range(600): time.sleep(0.1)', { timeoutMs: 1_500 }))
    const exec = await sbx.runCode('"still here"')
    assert.equal(exec.text, "'still here'")
    assert.ok(Date.now() - started < 30_000, 'the long loop was interrupted, not waited for')
  } finally {
    await sbx.kill()
  }
})

test('code contexts: their own state and folder, listed, restarted, removed', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  try {
    await sbx.files.makeDir('/home/user/proj')
    await sbx.runCode('x = "default"')
    const ctx = await sbx.createCodeContext({ cwd: '/home/user/proj' })
    assert.equal(ctx.language, 'python')
    assert.equal(ctx.cwd, '/home/user/proj')
    await sbx.runCode('x = "own"', { context: ctx })
    assert.equal((await sbx.runCode('x')).text, "'default'")
    assert.equal((await sbx.runCode('x', { context: ctx })).text, "'own'")
    assert.equal((await sbx.runCode('import os; os.getcwd()', { context: ctx })).text, "'/home/user/proj'")

    const bash = await sbx.createCodeContext({ language: 'bash', cwd: '/home/user/proj' })
    assert.equal(bash.language, 'bash')
    const out = await sbx.runCode('pwd', { context: bash })
    assert.deepEqual(out.logs.stdout, ['/home/user/proj\n'])

    const ids = (await sbx.listCodeContexts()).map((c) => c.id)
    assert.deepEqual(ids, ['python', 'bash', ctx.id, bash.id])

    await sbx.restartCodeContext(ctx)
    assert.equal((await sbx.runCode('x', { context: ctx })).error.name, 'NameError')
    assert.equal((await sbx.runCode('x')).text, "'default'", 'a context restart leaves the default alone')

    const js = await sbx.createCodeContext({ language: 'javascript' })
    assert.equal(js.language, 'javascript')
    await sbx.runCode('const who = "node"', { context: js })
    assert.equal((await sbx.runCode('who + " " + typeof x', { context: js })).text, "'node undefined'")
    assert.equal((await sbx.runCode('[1, 2].map(n => n * 2)', { language: 'js' })).text, '[ 2, 4 ]')

    await sbx.removeCodeContext(ctx.id)
    assert.deepEqual((await sbx.listCodeContexts()).map((c) => c.id), ['python', 'bash', bash.id, js.id])
    await assert.rejects(sbx.runCode('1', { context: ctx }))
  } finally {
    await sbx.kill()
  }
})
