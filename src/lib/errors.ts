import type { ValidationItem } from './validation'

/**
 * What went wrong, in the domain's words. Domain code throws these; only the HTTP layer (src/api/errors.ts) turns a
 * kind into a status code. The detail is safe to show; the cause, if any, goes only to the log.
 */
export type DomainErrorKind =
  | 'invalid' // the input breaks a rule; the detail locates each problem
  | 'not_found'
  | 'conflict' // the request clashes with what is stored (a duplicate, a reference still in use)
  | 'refused' // well-formed, but the current state or a policy does not allow it
  | 'unauthenticated'
  | 'forbidden'
  | 'too_large'
  | 'unsupported_type'
  | 'limit_reached' // a concurrency or rate limit
  | 'upstream_failed' // a provider we called failed or could not be reached
  | 'unavailable' // this server cannot serve now: its database does not answer

export type ErrorDetail = string | ValidationItem[] | Record<string, unknown>

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    readonly detail: ErrorDetail,
    readonly cause?: unknown,
  ) {
    super(typeof detail === 'string' ? detail : kind)
  }
}

export const invalid = (problems: ValidationItem[] | ErrorDetail) => new DomainError('invalid', problems)
export const notFound = (detail: string) => new DomainError('not_found', detail)
export const conflict = (detail: ErrorDetail) => new DomainError('conflict', detail)
export const refused = (detail: string) => new DomainError('refused', detail)
export const unauthenticated = (detail: string) => new DomainError('unauthenticated', detail)
export const forbidden = (detail: string) => new DomainError('forbidden', detail)
export const tooLarge = (detail: string) => new DomainError('too_large', detail)
export const unsupportedType = (detail: string) => new DomainError('unsupported_type', detail)
export const limitReached = (detail: string) => new DomainError('limit_reached', detail)
export const upstreamFailed = (detail: string, cause: unknown) => new DomainError('upstream_failed', detail, cause)
