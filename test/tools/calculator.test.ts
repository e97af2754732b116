import { describe, expect, test } from 'bun:test'
import { CalculatorError, evaluateArithmetic } from '../../src/tools/calculator'

describe('calculator', () => {
  test.each([
    ['2000 + 5000', 7000],
    ['(1200 + 80) * 0.15', 192],
    ['0.1 + 0.2', 0.3],
    ['10 / 4', 2.5],
    ['-7 % 3', 2],
    ['7 % -3', -2],
    ['-2 ** 2', -4],
    ['2 ** 3 ** 2', 512],
    ['2 ^ 10', 1024],
    ['(-2) ** 2', 4],
    ['2 * -3', -6],
    ['--5', 5],
    ['1.5e3 + .5', 1500.5],
    ['round(2.675, 1) + abs(-1)', 3.7],
    ['min(4, 2, 8) + max(1, 9) + sum(1, 2, 3) + pow(2, 5)', 49],
    ['sqrt(16) + floor(2.7) + ceil(2.1) + int(-2.9) + float(1)', 8],
    ['ROUND(PI * 2, 2)', 6.28],
    ['  3  ', 3],
  ])('%s = %p', (expression, expected) => {
    expect(evaluateArithmetic(expression)).toBe(expected)
  })

  test.each([
    ['', /empty/],
    ['1 / 0', /Division by zero/],
    ['5 % 0', /Division by zero/],
    ['0 ** -1', /Division by zero/],
    ['10 ** 400', /too large/],
    ['sqrt(-1)', /negative/],
    ['2 +', /ends too early/],
    ['(1 + 2', /Expected '\)'/],
    ['1 2', /Unexpected '2'/],
    ['process.exit(1)', /Unexpected character '\.'/],
    ['constructor(1)', /Unknown name 'constructor'/],
    ['__proto__', /Unknown name/],
    ["eval('1')", /Unexpected character/],
    ['x = 1', /Unknown name 'x'|Unexpected character/],
    ['pow(2)', /pow\(\) takes 2 arguments/],
    ['round(1, 2.5)', /whole number of digits/],
    ['1'.repeat(501), /longer than 500/],
    ['('.repeat(60) + '1' + ')'.repeat(60), /nested too deeply/],
    ['-'.repeat(60) + '1', /nested too deeply/],
  ])('%p is refused', (expression, message) => {
    expect(() => evaluateArithmetic(expression)).toThrow(CalculatorError)
    expect(() => evaluateArithmetic(expression)).toThrow(message)
  })
})
