/** An agent version's `workflow_configurations`: free-form, with the keys the platform reads always present. */
export type AgentConfigurations = Record<string, unknown> & { max_call_duration_seconds: number }

export const DEFAULT_MAX_CALL_DURATION_SECONDS = 600

export function withDefaultConfigurations(sent: Record<string, unknown> | null | undefined): AgentConfigurations {
  return { max_call_duration_seconds: DEFAULT_MAX_CALL_DURATION_SECONDS, ...sent }
}
