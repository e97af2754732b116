const JSON_HEADERS = { 'content-type': 'application/json;charset=utf-8' }

/**
 * A JSON text sent as it is, with the content type Elysia gives JSON, and without Elysia's run-time check of the
 * route's response schema: only for hot routes whose text is fixed (the node catalog) or written by the database from
 * the rows of one query selecting the schema's columns (the agent list), so the database's types and constraints
 * already hold it to the schema. The route's tests check such answers against the schema; the schema still documents
 * the route.
 */
export const jsonText = (json: string) => new Response(json, { headers: JSON_HEADERS })
