/** An in-process publish/subscribe of events that belong to one organization each. */
export type OrgEventBus<E extends { organizationId: number }> = {
  publish(event: E): void
  /** Calls `listener` with every later event of the organization; returns the unsubscribe. */
  subscribe(organizationId: number, listener: (event: E) => void): () => void
  /** Whether anyone listens at all: publishers skip the work of describing an event nobody reads. */
  hasListeners(): boolean
}

export function createOrgEventBus<E extends { organizationId: number }>(
  onListenerError: (error: unknown) => void,
): OrgEventBus<E> {
  const byOrganization = new Map<number, Set<(event: E) => void>>()
  return {
    publish(event) {
      for (const listener of byOrganization.get(event.organizationId) ?? []) {
        try {
          listener(event)
        } catch (error) {
          onListenerError(error)
        }
      }
    },
    subscribe(organizationId, listener) {
      const listeners = byOrganization.get(organizationId) ?? new Set()
      byOrganization.set(organizationId, listeners)
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
        if (listeners.size === 0 && byOrganization.get(organizationId) === listeners)
          byOrganization.delete(organizationId)
      }
    },
    hasListeners: () => byOrganization.size > 0,
  }
}
