-- Web calls (a voice call from the browser over a WebSocket) run in mode `webcall`: the channel group `web` gains it.
-- A generated column cannot be altered, so it is dropped and added again; the index and the triggers that read it go
-- first and come back unchanged (their text is 0002's).
DROP TRIGGER workflow_runs_inserted;
DROP TRIGGER workflow_runs_usage_changed;
DROP TRIGGER workflow_runs_deleted;
DROP INDEX workflow_runs_usage_channel;
ALTER TABLE workflow_runs DROP COLUMN channel;
ALTER TABLE workflow_runs ADD COLUMN channel TEXT GENERATED ALWAYS AS (CASE
    WHEN mode IN ('ari', 'cloudonix', 'exotel', 'plivo', 'telnyx', 'twilio', 'vobiz', 'vonage', 'whatsapp', 'stasis', 'VOICE') THEN 'telephony'
    WHEN mode IN ('webcall', 'webrtc', 'smallwebrtc') THEN 'web'
    WHEN mode IN ('textchat', 'CHAT') THEN 'chat'
  END) VIRTUAL;
CREATE INDEX workflow_runs_usage_channel ON workflow_runs(organization_id, channel, created_at) WHERE usage_info IS NOT NULL;

CREATE TRIGGER workflow_runs_inserted AFTER INSERT ON workflow_runs BEGIN
  UPDATE workflows SET total_runs = total_runs + 1 WHERE id = NEW.workflow_id;
  INSERT INTO workflow_run_numbers (rowid, caller_number, called_number)
    SELECT NEW.id, NEW.caller_number, NEW.called_number WHERE NEW.caller_number IS NOT NULL OR NEW.called_number IS NOT NULL;
  INSERT INTO usage_run_counts (organization_id, call_type, channel, runs)
    SELECT NEW.organization_id, NEW.call_type, coalesce(NEW.channel, ''), 1 WHERE NEW.usage_info IS NOT NULL
    ON CONFLICT DO UPDATE SET runs = runs + 1;
END;

CREATE TRIGGER workflow_runs_usage_changed AFTER UPDATE OF usage_info ON workflow_runs
WHEN (OLD.usage_info IS NULL) <> (NEW.usage_info IS NULL) BEGIN
  INSERT INTO usage_run_counts (organization_id, call_type, channel, runs)
    VALUES (NEW.organization_id, NEW.call_type, coalesce(NEW.channel, ''), CASE WHEN NEW.usage_info IS NULL THEN -1 ELSE 1 END)
    ON CONFLICT DO UPDATE SET runs = runs + excluded.runs;
END;

CREATE TRIGGER workflow_runs_deleted AFTER DELETE ON workflow_runs BEGIN
  UPDATE workflows SET total_runs = total_runs - 1 WHERE id = OLD.workflow_id;
  DELETE FROM workflow_run_numbers WHERE rowid = OLD.id;
  UPDATE usage_run_counts SET runs = runs - 1
    WHERE OLD.usage_info IS NOT NULL AND organization_id = OLD.organization_id AND call_type = OLD.call_type AND channel = coalesce(OLD.channel, '');
END;
