import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  COMMAND_LANGUAGES,
  docBlocks,
  httpAsCurl,
  jsonValues,
  parseIni,
  shapeProblems,
  stasisLines,
  type DocBlock,
} from './support/doc-blocks'
import { compiledBinary } from './support/compiled-binary'
import { startFakeAri, type FakeAri } from './support/fake-ari'
import { deadBaseUrl, startFakeModels, type FakeModels } from './support/fake-models'
import { startBinaryTestApp, type HttpTestApp } from './support/http-app'
import { callerSpeech } from './support/voice'
import { marksProcessed } from './support/voice-calls'
import { waitFor } from './support/wait'

/**
 * Every command in README.md and docs/*.md runs here (issue 22), so the docs cannot drift from the product: the shell
 * and HTTP examples of each file run in order with bash against the compiled binary on a fresh data dir, with this
 * test's fakes on 127.0.0.1 standing in for Asterisk (test/support/fake-ari.ts), Ollama and speaches
 * (test/support/fake-models.ts). A file's blocks share one shell session (what a block sets, `AGENT_ID=$(…)`, the next
 * one reads), which starts from the variables README's first call left. The rules for writing blocks are in
 * test/support/doc-blocks.ts and docs/development.md.
 */

const ROOT = join(import.meta.dir, '..')
const DOC_FILES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
]
const DOCS = DOC_FILES.map((file) => ({ file, ...docBlocks(file, readFileSync(join(ROOT, file), 'utf8')) }))
const ALL_BLOCKS = DOCS.flatMap(({ blocks }) => blocks)

/** What the fake caller says on every call a doc places, and what the fake LLM answers. */
const CALLER_SAYS = 'When are you open tomorrow?'
const AGENT_GREETS = 'Hello, Example Limited, how can I help?'
const AGENT_ANSWERS = 'We are open from nine to five.'

/** Where the docs' model servers listen (README step 2: Ollama, speaches): both are the fake model server here. */
const MODEL_SERVER_PORTS = [11434, 8001]

/** `127.0.0.1:port` and `localhost:port` (as written in URLs and in `--http HOST:PORT`) → `to`. */
const addressesOf = (port: number | string, to: string): [string, string][] => [
  [`127.0.0.1:${port}`, to],
  [`localhost:${port}`, to],
]

// ---------------------------------------------------------------------------------------------------------------
// What the configuration blocks say

function asteriskConfig() {
  const files = ALL_BLOCKS.filter((block) => block.lang === 'ini').map((block) => ({ block, ...parseIni(block.text) }))
  const httpConf = files.find(({ file }) => file === 'http.conf')
  const ariConf = files.find(({ file }) => file === 'ari.conf')
  const ariUser = ariConf?.sections.find((section) => section.entries.type === 'user')
  return {
    httpConf,
    ariConf,
    ariUser,
    port: httpConf?.sections.find((section) => section.name === 'general')?.entries.bindport ?? null,
    stasis: ALL_BLOCKS.filter((block) => block.lang === 'ini').flatMap((block) =>
      stasisLines(block.text).map((line) => ({ block, ...line })),
    ),
  }
}
const ASTERISK = asteriskConfig()

// ---------------------------------------------------------------------------------------------------------------
// The binary, the fakes and the shell

let work: string
let app: HttpTestApp
let fake: FakeAri
let models: FakeModels
let base: string
/** Docs' addresses and paths → this test's. */
let substitutions: [string, string][]
/** The shell variables README's blocks left, where every other file's session starts. */
let readmeState = ''

/**
 * curl as the docs run it: local addresses only; an HTTP error (4xx, 5xx) fails the command unless the example shows
 * the status itself (`-i`, `-w`, `-f`); the last answer is kept for the failure message.
 */
function writeCurlWrapper(path: string) {
  const real = Bun.which('curl')
  if (real === null) throw new Error('curl is not installed (.ci/run installs it)')
  writeFileSync(
    path,
    `#!/usr/bin/env bash
set -o pipefail
fail=(--fail-with-body)
for arg in "$@"; do
  if [[ $arg =~ ^https?:// && ! $arg =~ ^http://(127\.0\.0\.1|localhost)([:/]|$) ]]; then
    echo "docs-test: $arg is not on 127.0.0.1" >&2; exit 97
  fi
  if [[ $arg =~ ^(-[a-zA-Z]*[ifw][a-zA-Z]*|--include|--write-out|--fail|--fail-with-body)$ ]]; then fail=(); fi
done
${real} "\${fail[@]}" --max-time 20 --noproxy '*' "$@" | tee "$DOCS_TEST_LAST_ANSWER"
`,
  )
  chmodSync(path, 0o755)
}

function substituted(text: string): string {
  const keys = substitutions.map(([from]) => from).sort((a, b) => b.length - a.length)
  const pattern = new RegExp(keys.map((key) => key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g')
  return text.replace(pattern, (found) => substitutions.find(([from]) => from === found)![1])
}

type BlockRun = { exitCode: number; stdout: string; stderr: string; state: string }

/**
 * Runs one block with bash (`set -euo pipefail`) in the session `state` (the `declare -p` of what earlier blocks set),
 * and returns the session after it. A failing command is named by its line.
 */
async function runBlock(block: DocBlock, state: string): Promise<BlockRun> {
  const name = `${block.file.replace(/\W/g, '_')}-${block.line}`
  const files = {
    block: join(work, `${name}.sh`),
    state: join(work, `${name}.state`),
    after: join(work, `${name}.after`),
    answer: join(work, `${name}.answer`),
  }
  writeFileSync(files.block, substituted(block.lang === 'http' ? httpAsCurl(block.text) : block.text))
  writeFileSync(files.state, state)
  const script = [
    'docs_test_baseline=" $(compgen -v | tr "\\n" " ") "',
    'set -euo pipefail',
    'trap \'docs_test_status=$?; echo "docs-test: line $LINENO: exit $docs_test_status: $BASH_COMMAND" >&2\' ERR',
    `source ${files.state}`,
    `cd ${work}`,
    `source ${files.block}`,
    'for docs_test_name in $(compgen -v); do',
    '  case "$docs_test_baseline" in *" $docs_test_name "*) ;; *) [[ $docs_test_name == docs_test_* ]] || declare -p "$docs_test_name" ;; esac',
    `done > ${files.after}`,
  ].join('\n')
  const shell = Bun.spawn(['bash', '--noprofile', '--norc', '-c', script], {
    cwd: work,
    env: {
      ...process.env,
      PATH: `${join(work, 'bin')}:${process.env.PATH}`,
      RB: base,
      KEY: app.adminKey,
      DOCS_TEST_LAST_ANSWER: files.answer,
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    shell.kill('SIGKILL')
  }, 30_000)
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(shell.stdout).text(),
    new Response(shell.stderr).text(),
    shell.exited,
  ])
  clearTimeout(timer)
  const read = (path: string) => {
    try {
      return readFileSync(path, 'utf8')
    } catch {
      return ''
    }
  }
  if (exitCode !== 0) {
    const line = /docs-test: line (\d+): (.*)/.exec(stderr)
    const where = line
      ? `${block.file}:${block.line + Number(line[1])}: ${line[2]}`
      : `${block.file}:${block.line}: ${timedOut ? 'still running after 30 s' : `exit ${exitCode}`}`
    throw new Error(
      `${where}\n--- stderr\n${stderr.slice(-2000)}\n--- stdout\n${stdout.slice(-1000)}\n--- last answer\n${read(files.answer).slice(0, 1000)}`,
    )
  }
  return { exitCode, stdout, stderr, state: read(files.after) }
}

// ---------------------------------------------------------------------------------------------------------------
// Between blocks: what a reader waits for

/** The agents' runs, each in detail. */
async function allRuns(): Promise<any[]> {
  const agents = (await app.request('GET', '/api/v1/workflow/fetch')).body as { id: number }[]
  const runs = await Promise.all(
    agents.map(async (agent) => {
      const listed = (await app.request('GET', `/api/v1/workflow/${agent.id}/runs`)).body
      return Promise.all(
        (listed.runs as { id: number }[]).map(
          async (run) => (await app.request('GET', `/api/v1/workflow/${agent.id}/runs/${run.id}`)).body,
        ),
      )
    }),
  )
  return runs.flat()
}

/** The fake phone on `channelId` hears the greeting, says CALLER_SAYS, hears the answer and hangs up. */
async function talk(channelId: string, where: string) {
  await waitFor(`${where}: the media leg of ${channelId}`, () => fake.mediaOf(channelId) !== undefined, 10_000)
  const media = fake.mediaOf(channelId)!
  await media.connected
  await waitFor(`${where}: the greeting played on ${channelId}`, () => marksProcessed(media) >= 1, 20_000)
  const chatsBefore = models.requestsTo('/chat/completions').length
  media.speak(await callerSpeech(CALLER_SAYS))
  const asked = () =>
    models
      .requestsTo('/chat/completions')
      .slice(chatsBefore)
      .some((request) => request.body.messages.at(-1)?.content === CALLER_SAYS)
  await waitFor(`${where}: the caller heard and the LLM asked on ${channelId}`, asked, 20_000)
  const marksBefore = marksProcessed(media)
  await waitFor(`${where}: the answer played on ${channelId}`, () => marksProcessed(media) > marksBefore, 20_000)
  fake.hangup(channelId)
}

/**
 * After a block, what a reader would wait for before the next: every ARI configuration connected (with the
 * credentials of the ari.conf block, the port of the http.conf block), and every call it placed answered, talked
 * through and written (its transcript stored).
 */
async function settle(block: DocBlock, requestsBefore: number) {
  const where = `after ${block.file}:${block.line}`
  await waitFor(
    `${where}: every ARI configuration connected (do its ari_endpoint, app_name and app_password match http.conf and ari.conf?)`,
    async () => {
      const { configurations } = (await app.request('GET', '/api/v1/organizations/telephony-configs')).body
      return configurations.every(
        (configuration: { provider: string; inactive: boolean; connected: boolean | null }) =>
          configuration.provider !== 'ari' || configuration.inactive || configuration.connected === true,
      )
    },
    10_000,
    20,
  )
  const originated = fake.requests
    .slice(requestsBefore)
    .filter((request) => request.method === 'POST' && request.path === '/ari/channels')
  for (const request of originated) await talk(request.query.channelId, where)
  await waitFor(
    `${where}: every run completed and written`,
    async () =>
      (await allRuns()).every((run) => run.mode === 'textchat' || (run.is_completed && run.transcript_url !== null)),
    20_000,
    50,
  )
}

type FileRun = { outputs: Map<DocBlock, string>; state: string }

/** Runs a file's commands in order, one session; a block's documented output is matched loosely. */
async function runFile(file: string, state: string): Promise<FileRun> {
  const outputs = new Map<DocBlock, string>()
  for (const block of DOCS.find((doc) => doc.file === file)!.blocks) {
    if (!COMMAND_LANGUAGES.has(block.lang) || block.skip !== null) continue
    const requestsBefore = fake.requests.length
    const run = await runBlock(block, state)
    state = run.state
    outputs.set(block, run.stdout)
    if (block.output) {
      const printed = jsonValues(run.stdout).at(-1)
      const problems = shapeProblems(JSON.parse(block.output.text), printed)
      if (problems.length > 0)
        throw new Error(
          `${file}:${block.output.line}: the output shown is not what ${file}:${block.line} printed:\n${problems.join('\n')}\n--- printed\n${run.stdout.slice(-2000)}`,
        )
    }
    await settle(block, requestsBefore)
  }
  return { outputs, state }
}

// ---------------------------------------------------------------------------------------------------------------

describe('reading the doc blocks', () => {
  const sample = [
    '# Title',
    '',
    '```sh',
    'echo one',
    '```',
    '',
    '```json',
    '{"a": 1}',
    '```',
    '',
    'Then:',
    '',
    '<!-- docs-test: skip (starts a server) -->',
    '',
    '```bash',
    'npm start',
    '```',
    '',
    '- in a list:',
    '  ```ini',
    '  exten => 100,1,Stasis(ringbase_0123456789ab,${EXTEN})',
    '  ```',
    '```text',
    'a listing',
    '```',
  ].join('\n')

  test('commands, their outputs, skipped commands, configuration and listings', () => {
    const { blocks, problems } = docBlocks('x.md', sample)
    expect(problems).toEqual([])
    expect(blocks.map(({ line, lang, skip, output }) => ({ line, lang, skip, output: output?.line ?? null }))).toEqual([
      { line: 3, lang: 'sh', skip: null, output: 7 },
      { line: 15, lang: 'bash', skip: 'starts a server', output: null },
      { line: 20, lang: 'ini', skip: null, output: null },
      { line: 23, lang: 'text', skip: null, output: null },
    ])
    expect(stasisLines(blocks[2].text)).toEqual([{ exten: '100', app: 'ringbase_0123456789ab', args: '${EXTEN}' }])
  })

  test('a fence the test cannot place is a problem naming the file and line', () => {
    const { problems } = docBlocks(
      'docs/x.md',
      [
        '```',
        'ringbase serve',
        '```',
        '```python',
        'print(1)',
        '```',
        '<!-- docs-test: skip -->',
        '```sh',
        'ls',
        '```',
        '<!-- docs-test: skip (why) -->',
        '```ini',
        '[general]',
        '```',
        '```json',
        '{not json}',
        '```',
        '```sh',
        'unclosed',
      ].join('\n'),
    )
    expect(problems).toEqual([
      'docs/x.md:18: the fence opened here is never closed',
      expect.stringMatching(/^docs\/x\.md:1: fence ```\(no language\)/),
      expect.stringMatching(/^docs\/x\.md:4: fence ```python/),
      expect.stringMatching(/^docs\/x\.md:8: unknown marker/),
      'docs/x.md:12: only commands are skipped, this block is ```ini',
      expect.stringMatching(/^docs\/x\.md:15: this json block is not JSON/),
    ])
  })

  test('Asterisk configuration blocks', () => {
    expect(
      parseIni(
        '; /etc/asterisk/ari.conf\n[general]\nenabled = yes\n\n[ringbase]   ; the user\ntype = user\npassword = a=b',
      ),
    ).toEqual({
      file: 'ari.conf',
      sections: [
        { name: 'general', entries: { enabled: 'yes' } },
        { name: 'ringbase', entries: { type: 'user', password: 'a=b' } },
      ],
    })
  })

  test('an http block becomes a curl command of the same session', () => {
    expect(httpAsCurl('GET /api/v1/workflow/$AGENT_ID')).toBe(
      'curl -sS -X GET "$RB""/api/v1/workflow/$AGENT_ID" -H "X-API-Key: $KEY"',
    )
    expect(httpAsCurl('POST /api/v1/tools\nX-API-Key: $OTHER\n\n{"name": "x"}')).toBe(
      'curl -sS -X POST "$RB""/api/v1/tools" -H "X-API-Key: $OTHER" -H \'Content-Type: application/json\' --data-binary @- <<\'DOCS_TEST_BODY\'\n{"name": "x"}\nDOCS_TEST_BODY',
    )
  })

  test('printed JSON and the loose match of a documented output', () => {
    expect(jsonValues('{"a": [1, {"b": "}"}]}\n[2]\nnot {json\n')).toEqual([{ a: [1, { b: '}' }] }, [2]])
    const run = {
      id: 7,
      is_completed: true,
      logs: { transcript: [{ role: 'agent', text: 'Hi', start_ms: 3 }] },
      extra: 1,
    }
    expect(
      shapeProblems({ id: 1, is_completed: true, logs: { transcript: [{ role: 'user', text: 'x' }] } }, run),
    ).toEqual([])
    expect(shapeProblems({ id: '1', is_completed: false, logs: { transcript: [] }, name: 'x' }, run)).toEqual([
      '$.id: the doc shows "1", got 7',
      '$.is_completed: the doc shows false, got true',
      '$.name: missing',
    ])
    expect(shapeProblems({ models: ['llama3.2'] }, { models: [] })).toEqual([
      '$.models: the doc shows items, got an empty array',
    ])
  })
})

describe('the docs, run against the compiled binary', () => {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'ringbase-docs-'))
    const binary = join(work, 'dist', 'ringbase')
    mkdirSync(join(work, 'dist'))
    symlinkSync(compiledBinary(), binary)
    mkdirSync(join(work, 'bin'))
    mkdirSync(join(work, 'backups'))
    symlinkSync(binary, join(work, 'bin', 'ringbase'))
    writeCurlWrapper(join(work, 'bin', 'curl'))

    await callerSpeech(CALLER_SAYS)
    models = startFakeModels()
    models.chat.handler = (request) => ({
      text: request.body.messages.at(-1)?.role === 'user' ? AGENT_ANSWERS : AGENT_GREETS,
    })
    models.transcription.handler = () => ({ text: CALLER_SAYS })
    models.models.handler = () => ({
      ids: ['llama3.2', 'Systran/faster-distil-whisper-small.en', 'speaches-ai/Kokoro-82M-v1.0-ONNX'],
    })
    // The Asterisk of the docs: the ari.conf user they configure; every call it places is answered and stays up.
    fake = await startFakeAri({
      username: ASTERISK.ariUser?.name,
      password: ASTERISK.ariUser?.entries.password,
      defaultScenario: 'answered-stays-up',
    })
    // Carrier REST APIs the docs may name go nowhere (nothing leaves 127.0.0.1).
    const nowhere = deadBaseUrl()
    const carrierApis = Object.fromEntries(
      ['TWILIO', 'TELNYX', 'PLIVO', 'VOBIZ', 'VONAGE', 'CLOUDONIX', 'WHATSAPP'].map((name) => [
        `RINGBASE_PROVIDER_API_${name}`,
        nowhere,
      ]),
    )
    // A port of its own, not 0: the public download links a run shows carry the port the server was given.
    const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
    const port = probe.port
    probe.stop(true)
    app = await startBinaryTestApp(binary, {
      waitForLogLines: false,
      env: carrierApis,
      flags: { http: `127.0.0.1:${port}` },
    })
    base = await app.httpUrl()

    substitutions = [
      ['/var/lib/ringbase2', join(work, 'restored')],
      ['/var/lib/ringbase', app.dataDir],
      ['/backups/', `${join(work, 'backups')}/`],
      ...MODEL_SERVER_PORTS.flatMap((port) => addressesOf(port, new URL(models.baseUrl).host)),
      ...(ASTERISK.port === null ? [] : addressesOf(ASTERISK.port, new URL(fake.url).host)),
      ...addressesOf(8000, new URL(base).host),
    ]
  }, 120_000)

  afterAll(async () => {
    await app?.close()
    await fake?.close()
    models?.stop()
    rmSync(work, { recursive: true, force: true })
  })

  test('every fence is a command the test runs, a skipped one with its reason, an output, JSON, configuration or a listing', () => {
    expect(DOCS.flatMap(({ problems }) => problems)).toEqual([])
    const skipped = ALL_BLOCKS.filter((block) => block.skip !== null).map(
      (block) => `${block.file}:${block.line} (${block.skip})`,
    )
    // Keep it short: a command a reader runs belongs in the test.
    expect(skipped.length, skipped.join('\n')).toBeLessThanOrEqual(4)
  })

  test('http.conf and ari.conf give Ringbase what it needs, and the dialplan hands calls to the app Ringbase registers', () => {
    const general = (sections: { name: string; entries: Record<string, string> }[] | undefined) =>
      sections?.find((section) => section.name === 'general')?.entries
    expect(general(ASTERISK.httpConf?.sections)).toMatchObject({
      enabled: 'yes',
      bindport: expect.stringMatching(/^\d+$/),
    })
    expect(general(ASTERISK.ariConf?.sections)).toMatchObject({ enabled: 'yes' })
    // A user Ringbase can originate and bridge with: read_only would refuse every POST.
    const { type, read_only: readOnly, password } = ASTERISK.ariUser?.entries ?? {}
    expect({ type, readOnly }).toEqual({ type: 'user', readOnly: 'no' })
    expect(password).toMatch(/^\S{8,}$/)
    // The commands configure Ringbase with that user and that port.
    const commands = ALL_BLOCKS.filter((block) => COMMAND_LANGUAGES.has(block.lang))
      .map((block) => block.text)
      .join('\n')
    expect(commands).toContain(`"app_name": "${ASTERISK.ariUser?.name}"`)
    expect(commands).toContain(`"app_password": "${ASTERISK.ariUser?.entries.password}"`)
    expect(commands).toContain(`:${ASTERISK.port}"`)
    expect(ASTERISK.stasis.length).toBeGreaterThan(0)
    for (const line of ASTERISK.stasis) {
      // The app is the configuration's stasis_app_name (what Ringbase mints), written out or as a placeholder.
      expect(line.app, `${line.block.file}:${line.block.line}`).toMatch(/^(ringbase_[0-9a-f]{12}|<stasis_app_name>)$/)
      expect(line.args, `${line.block.file}:${line.block.line}: the number dialled is the Stasis argument`).toBe(
        '${EXTEN}',
      )
    }
  })

  test("README: the first call, from model servers to the run's transcript, with the fakes standing in", async () => {
    const { outputs, state } = await runFile('README.md', '')
    readmeState = state
    // Step 2: the provider connections and the model configuration reach the servers the docs name.
    const [llm, stt, tts] = ['/chat/completions', '/audio/transcriptions', '/audio/speech'].map((path) =>
      models.requestsTo(path),
    )
    expect(llm.length).toBeGreaterThan(0)
    expect(stt.map((request) => request.body.model)).toContain('Systran/faster-distil-whisper-small.en')
    expect(tts.map((request) => request.body)).toContainEqual(
      expect.objectContaining({ model: 'speaches-ai/Kokoro-82M-v1.0-ONNX', voice: 'af_heart' }),
    )
    // Step 3: the Asterisk of http.conf and ari.conf, connected; step 5 dialled through the dial string template.
    const health = (await app.request('GET', '/api/v1/health')).body
    expect(health.ari).toEqual({ connected: 1, total: 1 })
    const dialled = fake.requests
      .filter((request) => request.method === 'POST' && request.path === '/ari/channels')
      .map((request) => request.query.endpoint)
    expect(dialled).toEqual(['PJSIP/1001'])
    // Step 6 printed the run with what was said.
    const printedRun = [...outputs.values()]
      .flatMap((output) => jsonValues(output))
      .find((value: any) => value?.logs?.transcript) as any
    expect(printedRun.is_completed).toBe(true)
    expect(printedRun.logs.transcript.map((turn: any) => [turn.role, turn.text])).toEqual([
      ['agent', AGENT_GREETS],
      ['user', CALLER_SAYS],
      ['agent', AGENT_ANSWERS],
    ])
    // "once the call is over the *_public_url fields download the transcript and recordings without a key"
    for (const field of [
      'transcript_public_url',
      'recording_public_url',
      'user_recording_public_url',
      'bot_recording_public_url',
    ]) {
      const download = await fetch(printedRun[field])
      expect(download.status, field).toBe(200)
      expect((await download.arrayBuffer()).byteLength, field).toBeGreaterThan(0)
    }
  }, 90_000)

  test('README: a phone dialling the extension of the dialplan line reaches the agent', async () => {
    const [configuration] = (await app.request('GET', '/api/v1/organizations/telephony-configs')).body.configurations
    const stasisApp = (await app.request('GET', `/api/v1/organizations/telephony-configs/${configuration.id}`)).body
      .credentials.stasis_app_name
    const line = ASTERISK.stasis.find(({ block, exten }) => block.file === 'README.md' && /^\d+$/.test(exten))!
    const callsBefore = (await allRuns()).filter((run) => run.mode !== 'textchat').length
    const channelId = fake.inboundCall({ exten: line.exten, callerNumber: '1001', app: stasisApp })
    await talk(channelId, `${line.block.file}:${line.block.line}`)
    await waitFor(
      'the inbound run written',
      async () => {
        const calls = (await allRuns()).filter((run) => run.mode !== 'textchat')
        return calls.length === callsBefore + 1 && calls.every((run) => run.is_completed && run.transcript_url !== null)
      },
      20_000,
      50,
    )
    const inbound = (await allRuns()).find((run) => run.call_type === 'inbound')
    expect(inbound.initial_context).toMatchObject({ called_number: line.exten, caller_number: '1001' })
    expect(inbound.logs.transcript.map((turn: any) => turn.text)).toEqual([AGENT_GREETS, CALLER_SAYS, AGENT_ANSWERS])
  }, 60_000)

  for (const { file, blocks } of DOCS.filter((doc) => doc.file !== 'README.md')) {
    const commands = blocks.filter((block) => COMMAND_LANGUAGES.has(block.lang) && block.skip === null)
    test.skipIf(commands.length === 0)(
      `${file}: every command runs`,
      async () => {
        await runFile(file, readmeState)
      },
      60_000,
    )
  }
})
