/**
 * How much a request may carry. Every string a request schema declares has a maxLength (test/api/request-limits.test.ts
 * reads the OpenAPI document to make sure), so no rule and no pattern ever runs over an unbounded string.
 */

/** Names, labels, file names, identifiers and numbers a client picks. */
export const MAX_NAME_LENGTH = 255
/** Short tokens: dates, sort keys, ids minted by the server, signatures. */
export const MAX_TOKEN_LENGTH = 128
export const MAX_URL_LENGTH = 2048
/** Passwords, API tokens and keys (a PEM private key included). */
export const MAX_SECRET_LENGTH = 8192
/** Longer free text: descriptions, JSON filter lists in a query string. */
export const MAX_TEXT_LENGTH = 8192

/** The largest JSON body any route takes; only the signed upload PUT streams more (up to --max-upload-bytes). */
export const MAX_JSON_BODY_BYTES = 1024 * 1024

/**
 * How deep a JSON body may nest (the body itself is level 1). Free-form objects (initial_context, definitions, model
 * settings) are stored as JSON, and SQLite's JSON functions stop at 1000 levels; nobody needs more than a few.
 */
export const MAX_JSON_DEPTH = 32
