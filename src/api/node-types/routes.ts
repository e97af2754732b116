import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { getNodeType, listNodeTypes, NodeSpecSchema, NodeTypesResponseSchema, SPEC_VERSION } from '../../agents/node-catalog'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import { notFound } from '../../lib/errors'
import { MAX_TOKEN_LENGTH } from '../../lib/limits'

const tags = ['Agents']

export const nodeTypeRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/node-types' })
    .use(auth(ctx))
    .get('', () => ({ spec_version: SPEC_VERSION, node_types: listNodeTypes() }), {
      response: { 200: NodeTypesResponseSchema, ...authErrors },
      detail: { tags, summary: 'List the node types agent definitions are built from, with their properties' },
    })
    .get('/:name', ({ params }) => {
      const spec = getNodeType(params.name)
      if (!spec) throw notFound(`Node type '${params.name}' not found`)
      return spec
    }, {
      params: t.Object({ name: t.String({ maxLength: MAX_TOKEN_LENGTH }) }),
      response: { 200: NodeSpecSchema, 404: ErrorDetail, ...authErrors },
      detail: { tags, summary: 'Get one node type by name' },
    })
