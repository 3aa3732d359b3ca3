// The control plane, driven by E2B's own SDK (e2b, pinned in package.json)
// against sandboxd's gateway: integration/e2b_test.go starts the daemon and
// `sandboxctl e2b serve`, and sets E2B_API_URL, E2B_SANDBOX_URL,
// E2B_API_KEY (and E2B_OTHER_KEY, a second key). Every test kills what it
// made; the Go side checks that nothing is left.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, SandboxNotFoundError, AuthenticationError } from 'e2b'

const other = process.env.E2B_OTHER_KEY

async function waitFor(cond, ms, what) {
  const end = Date.now() + ms
  for (;;) {
    if (await cond()) return
    if (Date.now() > end) throw new Error(`after ${ms} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

test('create, getInfo, setTimeout, kill', async () => {
  const sbx = await Sandbox.create('base', {
    timeoutMs: 60_000,
    metadata: { suite: 'sandboxes', 'who am i': 'a&b=c' },
    envs: { GREETING: 'hi' },
  })
  try {
    assert.match(sbx.sandboxId, /^[0-9a-f]{16}$/)
    const info = await sbx.getInfo()
    assert.equal(info.sandboxId, sbx.sandboxId)
    assert.equal(info.templateId, 'base')
    assert.equal(info.state, 'running')
    assert.deepEqual(info.metadata, { suite: 'sandboxes', 'who am i': 'a&b=c' })
    const left = info.endAt.getTime() - Date.now()
    assert.ok(left > 50_000 && left <= 61_000, `endAt is ${left} ms away`)
    assert.ok(info.cpuCount >= 1 && info.memoryMB > 0)
    assert.equal(await sbx.isRunning(), true)

    await sbx.setTimeout(600_000)
    const later = await sbx.getInfo()
    assert.ok(later.endAt.getTime() - Date.now() > 590_000, 'setTimeout extended the end')

    const metrics = await sbx.getMetrics()
    assert.ok(metrics.length >= 1 && metrics[0].memTotal > 0, JSON.stringify(metrics))
  } finally {
    assert.equal(await sbx.kill(), true)
  }
  assert.equal(await Sandbox.kill(sbx.sandboxId), false, 'a second kill finds nothing')
  assert.equal(await sbx.isRunning(), false, 'a killed sandbox is not running')
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError)
})

test('list by metadata and state, a page at a time', async () => {
  const tag = `list-${process.pid}-${Date.now()}`
  const made = []
  try {
    for (let i = 0; i < 3; i++) {
      made.push(await Sandbox.create('base', { timeoutMs: 60_000, metadata: { tag, i: String(i) } }))
    }
    await made[1].pause()
    const seen = []
    const pages = Sandbox.list({ query: { metadata: { tag } }, limit: 2 })
    let n = 0
    while (pages.hasNext) {
      const items = await pages.nextItems()
      assert.ok(items.length <= 2)
      seen.push(...items)
      n++
    }
    assert.equal(n, 2, 'three sandboxes in pages of two')
    assert.deepEqual(seen.map((s) => s.sandboxId).sort(), made.map((s) => s.sandboxId).sort())
    const paused = await Sandbox.list({ query: { metadata: { tag }, state: ['paused'] } }).nextItems()
    assert.deepEqual(paused.map((s) => s.sandboxId), [made[1].sandboxId])
    assert.equal(paused[0].state, 'paused')
    const one = await Sandbox.list({ query: { metadata: { tag, i: '2' } } }).nextItems()
    assert.deepEqual(one.map((s) => s.sandboxId), [made[2].sandboxId])
  } finally {
    for (const s of made) await s.kill()
  }
})

test('pause and connect', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })
  try {
    assert.equal(await sbx.pause(), true)
    assert.equal(await Sandbox.pause(sbx.sandboxId), false, 'pausing a paused sandbox says false')
    assert.equal((await sbx.getInfo()).state, 'paused')
    assert.equal(await sbx.isRunning(), false, 'a paused sandbox does not answer')
    const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 120_000 })
    assert.equal(again.sandboxId, sbx.sandboxId)
    const info = await again.getInfo()
    assert.equal(info.state, 'running')
    assert.ok(info.endAt.getTime() - Date.now() > 100_000)
    assert.equal(await again.isRunning(), true)
    // Connecting never shortens the end.
    await Sandbox.connect(sbx.sandboxId, { timeoutMs: 5_000 })
    assert.ok((await again.getInfo()).endAt.getTime() - Date.now() > 100_000)
  } finally {
    await sbx.kill()
  }
})

test('the timeout ends a sandbox', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 2_000 })
  try {
    await waitFor(async () => !(await sbx.isRunning()), 20_000, 'the sandbox outlived its timeout')
    await assert.rejects(sbx.getInfo(), SandboxNotFoundError)
  } finally {
    await Sandbox.kill(sbx.sandboxId)
  }
})

test('keys: another key sees nothing, a wrong one is refused', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })
  try {
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId, { apiKey: other }), SandboxNotFoundError)
    assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: other }), false)
    const theirs = await Sandbox.list({ apiKey: other }).nextItems()
    assert.ok(!theirs.some((s) => s.sandboxId === sbx.sandboxId))
    await assert.rejects(Sandbox.list({ apiKey: 'e2b_' + '0'.repeat(40) }).nextItems(), AuthenticationError)
    assert.equal(await sbx.isRunning(), true, 'the calls of another key changed nothing')
  } finally {
    await sbx.kill()
  }
})

test('what sandboxd does not have says so', async () => {
  await assert.rejects(Sandbox.create('base', { mcp: { exa: { apiKey: 'x' } } }), /not supported by sandboxd/)
  await assert.rejects(Sandbox.create('no-such-template'), /no-such-template|not found/i)
})
