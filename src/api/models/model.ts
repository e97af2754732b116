import { t } from 'elysia'
import { MAX_TOKEN_LENGTH } from '../../lib/limits'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  CreateProviderConnectionBody,
  UpdateProviderConnectionBody,
  ProviderConnectionView,
  ProviderConnectionList,
  ProviderConnectionCheck,
  CreateModelConfigurationBody,
  UpdateModelConfigurationBody,
  ModelConfigurationView,
  ModelConfigurationList,
  PriceCardSchema,
  PriceCardView,
  ModelProvidersMetadata,
} from '../../models/schemas'

export const UuidParams = t.Object({ uuid: t.String({ maxLength: MAX_TOKEN_LENGTH }) })

export const DeletedConnection = t.Object({ message: t.String() })

export const DeletedConfiguration = t.Object({ message: t.String(), uuid: t.String() })
