// Regenerates web/api-types.ts (the console's only view of the server: the types of the OpenAPI document).
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
const document = Bun.spawnSync([process.execPath, join(root, 'src', 'main.ts'), 'openapi'], { stderr: 'inherit' })
if (document.exitCode !== 0) process.exit(1)
const input = join(root, 'dist', 'openapi.json')
await Bun.write(input, document.stdout)
const out = join(root, 'web', 'api-types.ts')
const generated = Bun.spawnSync([join(root, 'node_modules', '.bin', 'openapi-typescript'), input, '-o', out], { stderr: 'inherit' })
if (generated.exitCode !== 0) process.exit(1)
await Bun.write(out, `// Generated from the OpenAPI document (\`ringbase openapi\`) by openapi-typescript: \`bun scripts/console-api-types.ts\`. Do not edit.\n${await Bun.file(out).text()}`)
