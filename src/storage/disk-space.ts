import { statfsSync } from 'node:fs'

export type DiskSpace = { free_bytes: number; total_bytes: number }

/** Free (for an unprivileged writer) and total bytes of the file system holding `directory`; null if it cannot be read. */
export function diskSpace(directory: string): DiskSpace | null {
  try {
    const stats = statfsSync(directory)
    return { free_bytes: stats.bavail * stats.bsize, total_bytes: stats.blocks * stats.bsize }
  } catch {
    return null
  }
}
