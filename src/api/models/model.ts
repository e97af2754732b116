import { t } from 'elysia'

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
} from '../../models/schemas'

export const UuidParams = t.Object({ uuid: t.String() })

export const DeletedConnection = t.Object({ message: t.String() })

export const DeletedConfiguration = t.Object({ message: t.String(), uuid: t.String() })
