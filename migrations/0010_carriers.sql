-- Carrier calls: the carrier's own id of a call (Twilio CallSid, Telnyx call_control_id, Vonage uuid, …), learnt from
-- the dial answer or, for inbound calls, from the carrier's webhook. Hang-up, status lookups and callbacks that do
-- not carry our run id (number-level status webhooks, Cloudonix CDRs) find the run by it.
ALTER TABLE workflow_runs ADD COLUMN provider_call_id TEXT;
CREATE UNIQUE INDEX workflow_runs_provider_call ON workflow_runs(mode, provider_call_id) WHERE provider_call_id IS NOT NULL;
