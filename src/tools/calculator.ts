/**
 * The calculator tool: arithmetic on numbers, read by a tokenizer and a recursive-descent parser of its own (no eval, no
 * Function, no access to anything but numbers). As the reference's: + - * / % ** and parentheses, unary signs, and the
 * functions abs, round, min, max, sum, pow, int and float; besides those sqrt, floor, ceil, `^` for powers and the
 * constants pi and e. `%` is floored like Python's (-7 % 3 = 2), `**` binds tighter than a sign (-2 ** 2 = -4) and
 * associates right (2 ** 3 ** 2 = 512).
 */

export class CalculatorError extends Error {}

const MAX_EXPRESSION_LENGTH = 500
const MAX_DEPTH = 50
/** Enough digits for money and measures, without binary noise such as 0.30000000000000004. */
const SIGNIFICANT_DIGITS = 12

type Token = { kind: 'number'; value: number } | { kind: 'name'; value: string } | { kind: 'op'; value: string }

const OPERATORS = ['**', '+', '-', '*', '/', '%', '^', '(', ')', ',']

function tokenize(expression: string): Token[] {
  const tokens: Token[] = []
  let at = 0
  while (at < expression.length) {
    const rest = expression.slice(at)
    const space = /^\s+/.exec(rest)
    if (space) {
      at += space[0].length
      continue
    }
    const number = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(rest)
    if (number) {
      tokens.push({ kind: 'number', value: Number(number[0]) })
      at += number[0].length
      continue
    }
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest)
    if (name) {
      tokens.push({ kind: 'name', value: name[0].toLowerCase() })
      at += name[0].length
      continue
    }
    const operator = OPERATORS.find((candidate) => rest.startsWith(candidate))
    if (!operator) throw new CalculatorError(`Unexpected character '${rest[0]}' at position ${at + 1}`)
    tokens.push({ kind: 'op', value: operator })
    at += operator.length
  }
  return tokens
}

const finite = (value: number): number => {
  if (!Number.isFinite(value)) throw new CalculatorError('The result is too large or undefined')
  return value
}

const atLeast = (name: string, count: number) => (args: number[]) => {
  if (args.length < count)
    throw new CalculatorError(`${name}() needs at least ${count} argument${count > 1 ? 's' : ''}`)
  return args
}
const exactly = (name: string, count: number) => (args: number[]) => {
  if (args.length !== count) throw new CalculatorError(`${name}() takes ${count} argument${count > 1 ? 's' : ''}`)
  return args
}

function power(base: number, exponent: number): number {
  if (base === 0 && exponent < 0) throw new CalculatorError('Division by zero')
  return finite(base ** exponent)
}

function round(args: number[]): number {
  if (args.length < 1 || args.length > 2) throw new CalculatorError('round() takes 1 or 2 arguments')
  const digits = args[1] ?? 0
  if (!Number.isInteger(digits) || Math.abs(digits) > 15)
    throw new CalculatorError('round() takes a whole number of digits up to 15')
  const scale = 10 ** digits
  return Math.round(args[0] * scale) / scale
}

const FUNCTIONS: Record<string, (args: number[]) => number> = {
  abs: (args) => Math.abs(exactly('abs', 1)(args)[0]),
  round,
  min: (args) => Math.min(...atLeast('min', 1)(args)),
  max: (args) => Math.max(...atLeast('max', 1)(args)),
  sum: (args) => args.reduce((total, value) => total + value, 0),
  pow: (args) => power(...(exactly('pow', 2)(args) as [number, number])),
  sqrt: (args) => {
    const [value] = exactly('sqrt', 1)(args)
    if (value < 0) throw new CalculatorError('sqrt() of a negative number')
    return Math.sqrt(value)
  },
  floor: (args) => Math.floor(exactly('floor', 1)(args)[0]),
  ceil: (args) => Math.ceil(exactly('ceil', 1)(args)[0]),
  int: (args) => Math.trunc(exactly('int', 1)(args)[0]),
  float: (args) => exactly('float', 1)(args)[0],
}

const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E }

function binary(operator: string, left: number, right: number): number {
  switch (operator) {
    case '+':
      return left + right
    case '-':
      return left - right
    case '*':
      return left * right
    case '/':
      if (right === 0) throw new CalculatorError('Division by zero')
      return left / right
    case '%':
      if (right === 0) throw new CalculatorError('Division by zero')
      return left - right * Math.floor(left / right)
    default:
      return power(left, right)
  }
}

/** Evaluates `expression`; throws CalculatorError with a message meant for the model. */
export function evaluateArithmetic(expression: string): number {
  if (expression.trim() === '') throw new CalculatorError('The expression is empty')
  if (expression.length > MAX_EXPRESSION_LENGTH)
    throw new CalculatorError(`The expression is longer than ${MAX_EXPRESSION_LENGTH} characters`)
  const tokens = tokenize(expression)
  let position = 0
  let depth = 0
  const peek = (): Token | undefined => tokens[position]
  const isOp = (value: string) => peek()?.kind === 'op' && peek()!.value === value
  const expect = (value: string) => {
    if (!isOp(value))
      throw new CalculatorError(`Expected '${value}'${peek() ? ` before '${peek()!.value}'` : ' at the end'}`)
    position++
  }
  const nested = <T>(parse: () => T): T => {
    if (++depth > MAX_DEPTH) throw new CalculatorError('The expression is nested too deeply')
    try {
      return parse()
    } finally {
      depth--
    }
  }

  const sum = (): number =>
    nested(() => {
      let value = product()
      while (isOp('+') || isOp('-')) value = finite(binary(tokens[position++].value as string, value, product()))
      return value
    })
  const product = (): number => {
    let value = unary()
    while (isOp('*') || isOp('/') || isOp('%'))
      value = finite(binary(tokens[position++].value as string, value, unary()))
    return value
  }
  const unary = (): number =>
    nested(() => {
      if (isOp('-')) {
        position++
        return -unary()
      }
      if (isOp('+')) {
        position++
        return unary()
      }
      const base = primary()
      if (isOp('**') || isOp('^')) {
        position++
        return power(base, unary())
      }
      return base
    })
  const primary = (): number => {
    const token = peek()
    if (!token) throw new CalculatorError('The expression ends too early')
    position++
    if (token.kind === 'number') return token.value
    if (token.kind === 'op') {
      if (token.value !== '(') throw new CalculatorError(`Unexpected '${token.value}'`)
      const value = sum()
      expect(')')
      return value
    }
    if (Object.hasOwn(CONSTANTS, token.value)) return CONSTANTS[token.value]
    if (!Object.hasOwn(FUNCTIONS, token.value))
      throw new CalculatorError(`Unknown name '${token.value}'; functions: ${Object.keys(FUNCTIONS).join(', ')}`)
    const fn = FUNCTIONS[token.value]
    expect('(')
    const args: number[] = []
    if (!isOp(')')) {
      args.push(sum())
      while (isOp(',')) {
        position++
        args.push(sum())
      }
    }
    expect(')')
    return finite(fn(args))
  }

  const value = sum()
  if (position < tokens.length)
    throw new CalculatorError(`Unexpected '${tokens[position].value}' after a complete expression`)
  return Number(finite(value).toPrecision(SIGNIFICANT_DIGITS))
}
