// What one hostile request costs the event loop: `bun scripts/bench/hostile-bodies.ts [rounds]` (default 5). Sends, in
// process (app.handle), bodies at the 1 MiB limit that put a string where an object is expected (a record, a union of
// a record and null, a nested object), with an admin key and with none, and reports per body the answer and the wall
// time of each round: the event loop is held that long, every call in progress with it.
import { createTestApp } from '../../test/support/app'

const rounds = Number(process.argv[2] ?? 5)
const longText = 'é'.repeat(500_000 - 100)
const t = createTestApp()
const bodies: { name: string; path: string; body: unknown }[] = [
  {
    name: 'trigger: initial_context (record or null) as a string',
    path: '/api/v1/public/agent/workflow/99999999999999999999',
    body: { phone_number: '+14155550100', initial_context: longText },
  },
  {
    name: 'agent create: workflow_configurations (object) as a string',
    path: '/api/v1/workflow/create/definition',
    body: { name: 'A', workflow_definition: { nodes: [], edges: [] }, workflow_configurations: longText },
  },
  {
    name: 'credential create: credential_data (record) as a string',
    path: '/api/v1/credentials',
    body: { name: 'C', credential_type: 'bearer_token', credential_data: longText },
  },
]
try {
  for (const { name, path, body } of bodies) {
    for (const key of [t.adminKey, null]) {
      const timesMs: number[] = []
      let status = 0
      for (let round = 0; round < rounds; round++) {
        const startedAt = performance.now()
        const response = await t.app.handle(
          new Request(`http://localhost${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
            body: JSON.stringify(body),
          }),
        )
        await response.arrayBuffer()
        status = response.status
        timesMs.push(Math.round(performance.now() - startedAt))
      }
      console.log(JSON.stringify({ body: name, key: key ? 'admin' : 'none', status, wall_ms: timesMs }))
    }
  }
} finally {
  t.close()
}
