import { t } from 'elysia'

export const PresignedUploadBody = t.Object({
  file_name: t.String({ pattern: '.*\\.csv$', description: 'CSV file name' }),
  file_size: t.Integer({ exclusiveMinimum: 0, description: 'Size in bytes; the upload may not exceed it' }),
  content_type: t.Optional(t.String({ default: 'text/csv', description: 'Must be text/csv' })),
})

export const PresignedUploadResponse = t.Object({
  upload_url: t.String({ description: 'PUT the file here with the same Content-Type; no API key needed' }),
  file_key: t.String({ description: 'Use as the campaign source_id' }),
  expires_in: t.Integer({ description: 'Seconds the upload URL stays valid' }),
})

export const UploadQuery = t.Object({
  key: t.String(),
  content_type: t.String(),
  size: t.String(),
  expires: t.String(),
  signature: t.String(),
})

export const DownloadQuery = t.Object({ key: t.String(), expires: t.String(), signature: t.String() })

export const UploadResponse = t.Object({ file_key: t.String(), size: t.Integer() })
