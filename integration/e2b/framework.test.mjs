// ComputeSDK's E2B provider (@computesdk/e2b, pinned), a framework built on
// E2B's SDK, used through its public API only: it reaches the gateway
// because the E2B SDK under it reads E2B_API_URL and E2B_SANDBOX_URL (see
// sandboxes.test.mjs for the setting).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { e2b } from '@computesdk/e2b'

test('computesdk: create, run a command, run code, files, destroy', async () => {
  const compute = e2b({ apiKey: process.env.E2B_API_KEY, timeout: 120_000 })
  const sbx = await compute.sandbox.create({ templateId: 'base' })
  try {
    assert.ok(sbx.sandboxId)
    const r = await sbx.runCommand('echo ok; echo err >&2; exit 4')
    assert.equal(r.stdout, 'ok\n')
    assert.equal(r.stderr, 'err\n')
    assert.equal(r.exitCode, 4)

    // Code runs as the framework's README runs it: through its shell.
    const code = await sbx.runCommand(`python3 - <<'PY'
import json
print(json.dumps({"sum": sum(range(10))}))
PY`)
    assert.equal(code.exitCode, 0, code.stderr)
    assert.deepEqual(JSON.parse(code.stdout), { sum: 45 })

    await sbx.filesystem.writeFile('/home/user/f.txt', 'framework')
    assert.equal(await sbx.filesystem.readFile('/home/user/f.txt'), 'framework')
    assert.equal(await sbx.filesystem.exists('/home/user/f.txt'), true)
    const names = (await sbx.filesystem.readdir('/home/user')).map((e) => e.name)
    assert.ok(names.includes('f.txt'), names.join(','))

    const again = await compute.sandbox.getById(sbx.sandboxId)
    assert.equal(again?.sandboxId, sbx.sandboxId)
    // Commands start in the user's home (sandboxd's /workspace: docs/e2b.md, Paths).
    assert.equal((await again.runCommand('cat f.txt')).stdout, 'framework')
  } finally {
    await sbx.destroy()
  }
  // The framework swallows destroy's errors: the sandbox must be gone.
  assert.equal(await compute.sandbox.getById(sbx.sandboxId), null)
})
