// The only place tables are declared: one file per domain, mirrored by the SQL files in migrations/.
export * from './core'
export * from './agents'
export * from './telephony'
export * from './campaigns'
export * from './models'
export * from './credentials'
