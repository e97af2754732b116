-- Correlating provider events with runs, and what the campaign engine reads from runs.

-- Chosen by us before dialing (the ARI channel id), so events that race the dial response find their run.
ALTER TABLE workflow_runs ADD COLUMN call_id TEXT;
CREATE UNIQUE INDEX workflow_runs_call ON workflow_runs(call_id) WHERE call_id IS NOT NULL;
-- Calls not finished yet, per organization: the concurrent call limit and the restart reconciliation read these.
CREATE INDEX workflow_runs_open_calls ON workflow_runs(organization_id) WHERE call_id IS NOT NULL AND state <> 'completed';

-- The traffic-split variant a campaign call was placed for.
ALTER TABLE workflow_runs ADD COLUMN traffic_variant_id TEXT;
-- The circuit breaker's sliding window and traffic stats read a campaign's finished calls by time.
CREATE INDEX workflow_runs_campaign_completed ON workflow_runs(campaign_id, completed_at, disposition) WHERE campaign_id IS NOT NULL;
