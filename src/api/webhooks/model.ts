/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export { CreatedSigningSecret, SigningSecretStatus } from '../../runs/schemas'
