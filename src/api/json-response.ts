import type { Static, TSchema } from '@sinclair/typebox'

const JSON_HEADERS = { 'content-type': 'application/json;charset=utf-8' }

/** A JSON text sent as it is, with the content type Elysia gives JSON. */
export const jsonText = (json: string) => new Response(json, { headers: JSON_HEADERS })

/**
 * A value of the route's response schema sent as JSON without Elysia's run-time check and cleaning of it: only for hot
 * routes whose value is the rows of one query selecting the schema's columns, so the database's types and constraints
 * already hold it to the schema (listing 20 agents, the check was ~12 µs of ~60 per request over HTTP). The route's
 * tests check such answers against the schema; the schema still documents the route and types `value`.
 */
export const uncheckedJson = <T extends TSchema>(_schema: T, value: Static<T>) => jsonText(JSON.stringify(value))
