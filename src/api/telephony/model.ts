import { t } from 'elysia'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  CreateConfigurationBody,
  UpdateConfigurationBody,
  TrunkView,
  TrunkList,
  ConfigurationDetail,
  type ConfigurationListItem,
  ConfigurationList,
  DeletedConfiguration,
  ProvidersMetadata,
  CreatePhoneNumberBody,
  UpdatePhoneNumberBody,
  PhoneNumberView,
  PhoneNumberList,
  DeletedPhoneNumber,
  CreateTrunkBody,
  UpdateTrunkBody,
  TrunkDeleted,
} from '../../telephony/schemas'

export const ConfigIdParams = t.Object({ config_id: t.Integer() })

export const PhoneNumberParams = t.Object({ config_id: t.Integer(), phone_number_id: t.Integer() })

export const TrunkParams = t.Object({ config_id: t.Integer(), trunk_id: t.Integer() })
