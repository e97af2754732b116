import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import ts from 'typescript'

/**
 * The layering of src/, read from the source text: no import cycle (type-only imports included), HTTP only in
 * src/api/ (and main.ts), the SQL dialect only in src/db/, lib/ standing alone.
 */

const ROOT = join(import.meta.dir, '..')
const SRC = join(ROOT, 'src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })
}

const FILES = sourceFiles(SRC)
const rel = (path: string) => relative(ROOT, path)
/** Comments stripped, so a rule is not tripped by prose explaining it. Strings stay: SQL lives in them. */
const code = (path: string) => readFileSync(path, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1')

/** Every module a file imports or re-exports (static, type-only and dynamic), as written. */
function specifiers(text: string): string[] {
  const found: string[] = []
  for (const match of text.matchAll(/(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
    found.push(match[1] ?? match[2] ?? match[3])
  }
  return found
}

function resolveLocal(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null
  const base = join(dirname(from), specifier)
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate
  }
  return null
}

const SOURCE = new Set(FILES)
const GRAPH = new Map(FILES.map((file) => {
  const text = code(file)
  const imports = specifiers(text)
  return [file, { text, imports, local: imports.map((s) => resolveLocal(file, s)).filter((p): p is string => p !== null && SOURCE.has(p)) }]
}))

/** The cycles of the graph (strongly connected components with more than one file, or a file importing itself). */
function cycles(): string[][] {
  let index = 0
  const indices = new Map<string, number>()
  const lowLinks = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  const visit = (file: string) => {
    indices.set(file, index)
    lowLinks.set(file, index++)
    stack.push(file)
    onStack.add(file)
    for (const next of GRAPH.get(file)?.local ?? []) {
      if (!indices.has(next)) {
        visit(next)
        lowLinks.set(file, Math.min(lowLinks.get(file)!, lowLinks.get(next)!))
      } else if (onStack.has(next)) {
        lowLinks.set(file, Math.min(lowLinks.get(file)!, indices.get(next)!))
      }
    }
    if (lowLinks.get(file) === indices.get(file)) {
      const component: string[] = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== file)
      if (component.length > 1 || GRAPH.get(file)!.local.includes(file)) components.push(component.map(rel).sort())
    }
  }
  for (const file of FILES) if (!indices.has(file)) visit(file)
  return components
}

const inside = (file: string, folder: string) => rel(file).startsWith(`src/${folder}/`)
const isHttpLayer = (file: string) => inside(file, 'api') || rel(file) === 'src/main.ts'

function offenders(rule: (file: string, entry: { text: string; imports: string[]; local: string[] }) => boolean): string[] {
  return FILES.filter((file) => rule(file, GRAPH.get(file)!)).map(rel).sort()
}

const HTTP_PACKAGE = /^(elysia|@elysiajs\/)/
/** What only the data layer may write: the SQLite driver and its drizzle flavour, SQLite's own SQL, numbered parameters. */
const SQLITE_SPECIFIC = [
  /from\s*['"](bun:sqlite|drizzle-orm\/bun-sqlite|drizzle-orm\/sqlite-core)['"]/,
  /\.immediate\(\)/,
  /\b(json_extract|json_type|json_each|json_object)\s*\(|\bsqlite_master\b/i,
  /\bPRAGMA\b/,
  /['"`][^'"`]*\?\d[^'"`]*['"`]/,
]

describe('import graph of src/', () => {
  test('the graph was read (sanity)', () => {
    expect(FILES.length).toBeGreaterThan(50)
    expect(GRAPH.get(join(SRC, 'main.ts'))!.local.length).toBeGreaterThan(3)
  })

  test('no import cycle, type-only imports included', () => {
    expect(cycles()).toEqual([])
  })

  test('only src/api/ and src/main.ts know HTTP (elysia, @elysiajs/*, src/api/)', () => {
    expect(offenders((file, { imports, local }) => !isHttpLayer(file)
      && (imports.some((s) => HTTP_PACKAGE.test(s)) || local.some((target) => inside(target, 'api'))))).toEqual([])
  })

  test('only src/db/ knows the SQL dialect', () => {
    expect(offenders((file, { text }) => !inside(file, 'db') && SQLITE_SPECIFIC.some((pattern) => pattern.test(text)))).toEqual([])
  })

  test('only the campaign state machine writes a campaign state', () => {
    const writesState = /UPDATE\s+campaigns\s+SET\b[^;`]*\bstate\s*=|\.update\(campaigns\)\s*\.set\(\{[^}]*\bstate\s*:/
    expect(offenders((file, { text }) => rel(file) !== 'src/campaigns/state-machine.ts' && writesState.test(text))).toEqual([])
  })

  test('src/lib/ imports nothing else of src/; src/context.ts imports only types', () => {
    expect(offenders((file, { local }) => inside(file, 'lib') && local.some((target) => !inside(target, 'lib')))).toEqual([])
    const context = GRAPH.get(join(SRC, 'context.ts'))!
    expect(context.text.match(/^import (?!type )[^\n]*$/gm) ?? []).toEqual([])
  })
})

/**
 * Function bodies, in lines, of every function in a file (declarations, expressions, arrows, methods). A closure counts
 * as part of the function around it, so a factory cannot hide a long call behind nested functions.
 */
function functionLengths(path: string): { name: string; lines: number }[] {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
  const found: { name: string; lines: number }[] = []
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const body = node.body as ts.Node
      const { parent } = node
      const name = node.name?.getText(source)
        ?? (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) ? parent.name.getText(source) : `<function at line ${lineOf(node.getStart(source)) + 1}>`)
      found.push({ name: `${rel(path)} ${name}`, lines: lineOf(body.getEnd()) - lineOf(body.getStart(source)) - 1 })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

describe('size of the call path', () => {
  test('no function in src/voice/, src/conversation/ or src/calls/ has a body over 120 lines', () => {
    const files = FILES.filter((file) => ['voice', 'conversation', 'calls'].some((folder) => inside(file, folder)))
    expect(files.length).toBeGreaterThan(20)
    expect(files.flatMap(functionLengths).filter(({ lines }) => lines > 120).map(({ name, lines }) => `${name}: ${lines}`)).toEqual([])
  })
})

describe('the console (web/) is a client of the API', () => {
  const WEB = join(ROOT, 'web')
  const webFiles = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return webFiles(path)
    return /\.tsx?$/.test(name) ? [path] : []
  })
  /** What the browser bundle may load: React, and its own files. */
  const ALLOWED_PACKAGES = new Set(['react', 'react-dom/client'])

  test('it imports only its own files, React, and nothing of the server (its API types are generated)', () => {
    const files = webFiles(WEB)
    expect(files.length).toBeGreaterThan(5)
    const offending = files.flatMap((file) => specifiers(code(file))
      .filter((specifier) => (specifier.startsWith('.') ? !join(dirname(file), specifier).startsWith(WEB) : !ALLOWED_PACKAGES.has(specifier)))
      .map((specifier) => `${rel(file)}: ${specifier}`))
    expect(offending).toEqual([])
  })

  test('it never sets HTML from strings', () => {
    expect(webFiles(WEB).filter((file) => /dangerouslySetInnerHTML|\.innerHTML\s*=|outerHTML|insertAdjacentHTML|document\.write/.test(code(file))).map(rel)).toEqual([])
  })
})
