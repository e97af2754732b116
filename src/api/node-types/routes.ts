import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { listNodeTypes, NodeSpecSchema, NodeTypesResponseSchema, SPEC_VERSION } from '../../definition/node-catalog'
import { auth } from '../auth'
import { jsonText } from '../json-response'
import { authErrors, ErrorDetail } from '../schemas'
import { notFound } from '../../lib/errors'
import { MAX_TOKEN_LENGTH } from '../../lib/limits'

const tags = ['Agents']

/**
 * The catalog never changes while the process runs: each answer is serialized once and sent as it is. A Response skips
 * Elysia's response check and cleaning, which took most of the ~300 µs each request spent on the 17 kB list; the
 * catalog's own test checks it against the schemas instead.
 */
const catalogJson = JSON.stringify({ spec_version: SPEC_VERSION, node_types: listNodeTypes() })
const nodeTypeJson = new Map(listNodeTypes().map((spec) => [spec.name, JSON.stringify(spec)]))

export const nodeTypeRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/node-types' })
    .use(auth(ctx))
    .get('', () => jsonText(catalogJson), {
      response: { 200: NodeTypesResponseSchema, ...authErrors },
      detail: { tags, summary: 'List the node types agent definitions are built from, with their properties' },
    })
    .get(
      '/:name',
      ({ params }) => {
        const spec = nodeTypeJson.get(params.name)
        if (spec === undefined) throw notFound(`Node type '${params.name}' not found`)
        return jsonText(spec)
      },
      {
        params: t.Object({ name: t.String({ maxLength: MAX_TOKEN_LENGTH }) }),
        response: { 200: NodeSpecSchema, 404: ErrorDetail, ...authErrors },
        detail: { tags, summary: 'Get one node type by name' },
      },
    )
