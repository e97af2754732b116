import { expect, test } from 'bun:test'
import { cloneJson } from '../../src/lib/values'

test('cloneJson copies a JSON value deeply, a __proto__ key as an own property, never touching a prototype', () => {
  const original = JSON.parse(
    '{"nodes":[{"id":"1","data":{"list":[1,"two",null,true,{"deep":{}}]}}],"__proto__":{"polluted":true},"n":1.5}',
  )
  const copy = cloneJson(original)
  expect(copy).toEqual(original)
  expect(JSON.stringify(copy)).toBe(JSON.stringify(original))
  copy.nodes[0].data.list[4].deep.changed = true
  copy.nodes.push({})
  expect(original.nodes).toHaveLength(1)
  expect(original.nodes[0].data.list[4].deep).toEqual({})
  expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
  expect(Object.hasOwn(copy, '__proto__')).toBe(true)
  expect((copy as { polluted?: unknown }).polluted).toBeUndefined()
  expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
  expect(cloneJson('text')).toBe('text')
  expect(cloneJson(null)).toBeNull()
})
