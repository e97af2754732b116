import { t } from 'elysia'
import { IdParam, PathId } from '../schemas'

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
} from '../../telephony/config/schemas'

export const ConfigIdParams = IdParam('config_id')

export const PhoneNumberParams = t.Object({ config_id: PathId, phone_number_id: PathId })

export const TrunkParams = t.Object({ config_id: PathId, trunk_id: PathId })
