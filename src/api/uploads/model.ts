import { t } from 'elysia'
import { MAX_NAME_LENGTH } from '../../lib/limits'

export const PresignedUploadBody = t.Object({
  file_name: t.String({ maxLength: MAX_NAME_LENGTH, pattern: '\\.csv$', description: 'CSV file name' }),
  file_size: t.Integer({ exclusiveMinimum: 0, description: 'Size in bytes; the upload may not exceed it' }),
  content_type: t.Optional(
    t.String({ default: 'text/csv', maxLength: MAX_NAME_LENGTH, description: 'Must be text/csv' }),
  ),
})

export const PresignedUploadResponse = t.Object({
  upload_url: t.String({ description: 'PUT the file here with the same Content-Type; no API key needed' }),
  file_key: t.String({ description: 'Use as the campaign source_id' }),
  expires_in: t.Integer({ description: 'Seconds the upload URL stays valid' }),
})

const SignedField = t.String({ maxLength: MAX_NAME_LENGTH })

export const UploadQuery = t.Object({
  key: SignedField,
  content_type: SignedField,
  size: SignedField,
  expires: SignedField,
  signature: SignedField,
})

export const DownloadQuery = t.Object({ key: SignedField, expires: SignedField, signature: SignedField })

export const UploadResponse = t.Object({ file_key: t.String(), size: t.Integer() })
