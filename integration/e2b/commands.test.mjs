// envd's commands and terminals (process.Process), driven by E2B's SDK
// (see sandboxes.test.mjs for the setting).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, CommandExitError } from 'e2b'

async function until(cond, ms, what) {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`after ${ms} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

test('commands.run: output, exit codes, envs, cwd, callbacks', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000 })
  try {
    const r = await sbx.commands.run('echo hi; echo err >&2')
    assert.equal(r.exitCode, 0)
    assert.equal(r.stdout, 'hi\n')
    assert.equal(r.stderr, 'err\n')

    await assert.rejects(sbx.commands.run('echo before; exit 3'), (err) => {
      assert.ok(err instanceof CommandExitError)
      assert.equal(err.exitCode, 3)
      assert.equal(err.stdout, 'before\n')
      return true
    })

    const seen = []
    const e = await sbx.commands.run('echo "$FOO"; pwd; echo one; sleep 0.2; echo two', {
      envs: { FOO: 'bar' },
      cwd: '/home/user',
      onStdout: (d) => seen.push(d),
    })
    assert.equal(e.stdout, 'bar\n/home/user\none\ntwo\n')
    assert.equal(seen.join(''), e.stdout, 'the callback saw every line')

    // E2B's user, at home in /home/user, which is where files go.
    const who = await sbx.commands.run('whoami; echo $HOME; pwd; echo hi > made.txt')
    assert.equal(who.stdout, 'user\n/home/user\n/home/user\n')
    assert.equal(await sbx.files.read('/home/user/made.txt'), 'hi\n')
    await sbx.files.write('written.txt', 'there')
    assert.equal((await sbx.commands.run('cat /home/user/written.txt', { cwd: '/tmp' })).stdout, 'there')
  } finally {
    await sbx.kill()
  }
})

test('commands: background, list, stdin, connect, kill', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000 })
  try {
    const cat = await sbx.commands.run('cat', { background: true, stdin: true })
    assert.ok(cat.pid > 0)
    const listed = await sbx.commands.list()
    const mine = listed.find((p) => p.pid === cat.pid)
    assert.ok(mine, JSON.stringify(listed))
    assert.equal(mine.cmd, '/bin/bash')
    assert.deepEqual(mine.args, ['-l', '-c', 'cat'])

    const again = await sbx.commands.connect(cat.pid)
    await sbx.commands.sendStdin(cat.pid, 'hello\n')
    await sbx.commands.closeStdin(cat.pid)
    const r = await cat.wait()
    assert.equal(r.stdout, 'hello\n')
    assert.equal(r.exitCode, 0)
    const r2 = await again.wait()
    assert.equal(r2.stdout, 'hello\n', 'connect follows from when it connected')

    const sleeper = await sbx.commands.run('sleep 60', { background: true })
    assert.equal(await sleeper.kill(), true)
    await assert.rejects(sleeper.wait())
    await until(async () => !(await sbx.commands.list()).some((p) => p.pid === sleeper.pid), 5_000, 'the killed command is still listed')
    assert.equal(await sbx.commands.kill(sleeper.pid), false, 'killing it again finds nothing')
  } finally {
    await sbx.kill()
  }
})

test('commands: a timeout ends the command', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000 })
  try {
    const started = Date.now()
    await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 1_000 }))
    assert.ok(Date.now() - started < 10_000)
    await until(async () => !(await sbx.commands.list()).length, 5_000, 'the command outlived its timeout')
  } finally {
    await sbx.kill()
  }
})

test('pty: create, input, resize, kill', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000 })
  try {
    let screen = ''
    const dec = new TextDecoder()
    const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { screen += dec.decode(d) } })
    await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
    await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size; echo "$TERM"\n'))
    await until(() => screen.includes('30 100') && screen.includes('xterm-256color'), 10_000, `the terminal showed ${JSON.stringify(screen)}`)
    await sbx.pty.sendInput(term.pid, new TextEncoder().encode('exit 5\n'))
    const r = await term.wait().catch((err) => err)
    assert.equal(r.exitCode, 5)

    const other = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })
    assert.equal(await sbx.pty.kill(other.pid), true)
  } finally {
    await sbx.kill()
  }
})
