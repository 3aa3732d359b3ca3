// envd's file transfer (GET and POST /files), driven by E2B's SDK (see
// sandboxes.test.mjs for the setting). E2B's home, /home/user, is the
// session's /workspace.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { NotFoundError, InvalidArgumentError } from 'e2b'
import { Sandbox } from '@e2b/code-interpreter'

test('files: write and read, text, bytes, several at once', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    const info = await sbx.files.write('hello.txt', 'hi there')
    assert.equal(info.path, '/home/user/hello.txt')
    assert.equal(info.name, 'hello.txt')
    assert.equal(await sbx.files.read('/home/user/hello.txt'), 'hi there')
    const seen = await sbx.runCode('open("/workspace/hello.txt").read()')
    assert.equal(seen.text, "'hi there'", 'the code sees the file')

    const bytes = new Uint8Array([0, 1, 2, 254, 255])
    await sbx.files.write('/tmp/b.bin', bytes.buffer)
    assert.deepEqual(await sbx.files.read('/tmp/b.bin', { format: 'bytes' }), bytes)

    const many = await sbx.files.write([
      { path: 'd/one.txt', data: 'one' },
      { path: 'd/two.txt', data: 'two' },
    ])
    assert.deepEqual(many.map((w) => w.path).sort(), ['/home/user/d/one.txt', '/home/user/d/two.txt'])
    assert.equal(await sbx.files.read('d/two.txt'), 'two')

    await sbx.runCode('open("/workspace/made.txt", "w").write("by code")')
    assert.equal(await sbx.files.read('made.txt'), 'by code')

    await assert.rejects(sbx.files.read('missing.txt'), NotFoundError)
    await assert.rejects(sbx.files.write('/etc/passwd', 'x'), InvalidArgumentError)
  } finally {
    await sbx.kill()
  }
})

test('files: list, info, makeDir, rename, remove, exists', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    assert.equal(await sbx.files.makeDir('proj/src'), true)
    assert.equal(await sbx.files.makeDir('proj/src'), false, 'a folder already there says false')
    await sbx.files.write('proj/src/main.py', 'print(1)\n')
    await sbx.files.write('proj/README', 'hi')

    const top = await sbx.files.list('proj')
    assert.deepEqual(top.map((e) => e.name).sort(), ['README', 'src'])
    const dir = top.find((e) => e.name === 'src')
    assert.equal(dir.type, 'dir')
    assert.equal(dir.path, '/home/user/proj/src')
    const deep = await sbx.files.list('/home/user/proj', { depth: 2 })
    assert.ok(deep.some((e) => e.path === '/home/user/proj/src/main.py'), JSON.stringify(deep))

    const info = await sbx.files.getInfo('proj/src/main.py')
    assert.equal(info.type, 'file')
    assert.equal(info.size, 9)
    assert.equal(info.name, 'main.py')
    assert.match(info.permissions, /^-rw/)
    assert.ok(info.modifiedTime instanceof Date)

    assert.equal(await sbx.files.exists('proj/README'), true)
    assert.equal(await sbx.files.exists('proj/nothing'), false)

    const moved = await sbx.files.rename('proj/README', 'proj/README.md')
    assert.equal(moved.path, '/home/user/proj/README.md')
    assert.equal(await sbx.files.read('proj/README.md'), 'hi')

    await sbx.files.remove('proj/src')
    assert.equal(await sbx.files.exists('proj/src/main.py'), false)
    await assert.rejects(sbx.files.getInfo('proj/src'), NotFoundError)
  } finally {
    await sbx.kill()
  }
})

test('files: watchDir sees what code does', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    await sbx.files.makeDir('watched')
    const events = []
    const handle = await sbx.files.watchDir('watched', (e) => events.push(e), { recursive: true, includeEntry: true })
    try {
      await sbx.runCode('open("/workspace/watched/new.txt", "w").write("x")')
      const end = Date.now() + 10_000
      while (!events.some((e) => e.name === 'new.txt' && e.type === 'write') && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 50))
      }
      assert.ok(events.some((e) => e.name === 'new.txt' && e.type === 'create'), JSON.stringify(events))
      assert.ok(events.some((e) => e.name === 'new.txt' && e.type === 'write'), JSON.stringify(events))
      // includeEntry (envd 0.6.3): the entry as the gateway stats it.
      const entry = events.find((e) => e.name === 'new.txt' && e.type === 'write').entry
      assert.equal(entry?.path, '/home/user/watched/new.txt', JSON.stringify(events))
      assert.equal(entry.type, 'file')
    } finally {
      await handle.stop()
    }
  } finally {
    await sbx.kill()
  }
})

test('files: signed uploadUrl and downloadUrl, fetched without the SDK', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    const up = await sbx.uploadUrl('signed/up.txt')
    assert.match(up, /[?&]signature=v1_/)
    const form = new FormData()
    form.append('file', new Blob(['sent by fetch']), 'local-name.txt')
    const res = await fetch(up, { method: 'POST', body: form })
    assert.equal(res.status, 200, await res.clone().text())
    assert.equal((await res.json())[0].path, '/home/user/signed/up.txt')
    assert.equal(await sbx.files.read('signed/up.txt'), 'sent by fetch')

    const down = await sbx.downloadUrl('signed/up.txt', { useSignatureExpiration: 60 })
    assert.match(down, /[?&]signature_expiration=\d+/)
    const got = await fetch(down)
    assert.equal(got.status, 200)
    assert.equal(await got.text(), 'sent by fetch')

    // A signature for another path, or one past its expiration, is 401.
    const other = new URL(down)
    other.searchParams.set('path', 'signed/other.txt')
    assert.equal((await fetch(other)).status, 401)
    const expired = await sbx.downloadUrl('signed/up.txt', { useSignatureExpiration: -5 })
    const refused = await fetch(expired)
    assert.equal(refused.status, 401)
    assert.match((await refused.json()).message, /expired/)
  } finally {
    await sbx.kill()
  }
})

test('files: metadata (envd 0.6.2) kept as the file\'s extended attributes', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    const info = await sbx.files.write('meta.txt', 'with metadata', { metadata: { Author: 'ada', purpose: 'a test' } })
    assert.deepEqual(info.metadata, { author: 'ada', purpose: 'a test' })
    const got = await sbx.files.getInfo('meta.txt')
    assert.deepEqual(got.metadata, { author: 'ada', purpose: 'a test' })
    const listed = (await sbx.files.list('/home/user')).find((e) => e.name === 'meta.txt')
    assert.deepEqual(listed.metadata, { author: 'ada', purpose: 'a test' })
    // The code sees the attribute itself (runc: the same file system).
    const seen = await sbx.runCode('import os; os.getxattr("/workspace/meta.txt", "user.author").decode()')
    assert.equal(seen.text, "'ada'")
    // A write without metadata replaces the file whole.
    await sbx.files.write('meta.txt', 'plain')
    assert.equal((await sbx.files.getInfo('meta.txt')).metadata, undefined)
  } finally {
    await sbx.kill()
  }
})
