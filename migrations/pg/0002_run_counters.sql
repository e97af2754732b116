-- SQLite's triggers on workflow_runs (0002, 0011, 0013): agents' run totals and the usage report's run counts.
-- The caller/called number search needs no index of its own here: PostgreSQL scans with ILIKE (docs/scale-out.md).
CREATE FUNCTION workflow_runs_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE workflows SET total_runs = total_runs + 1 WHERE id = NEW.workflow_id;
    IF NEW.usage_info IS NOT NULL THEN
      INSERT INTO usage_run_counts (organization_id, call_type, channel, runs)
        VALUES (NEW.organization_id, NEW.call_type, coalesce(NEW.channel, ''), 1)
        ON CONFLICT (organization_id, call_type, channel) DO UPDATE SET runs = usage_run_counts.runs + 1;
    END IF;
    RETURN NEW;
  ELSIF TG_OP = 'UPDATE' THEN
    IF (OLD.usage_info IS NULL) <> (NEW.usage_info IS NULL) THEN
      INSERT INTO usage_run_counts (organization_id, call_type, channel, runs)
        VALUES (NEW.organization_id, NEW.call_type, coalesce(NEW.channel, ''), CASE WHEN NEW.usage_info IS NULL THEN -1 ELSE 1 END)
        ON CONFLICT (organization_id, call_type, channel) DO UPDATE SET runs = usage_run_counts.runs + excluded.runs;
    END IF;
    RETURN NEW;
  END IF;
  UPDATE workflows SET total_runs = total_runs - 1 WHERE id = OLD.workflow_id;
  UPDATE usage_run_counts SET runs = runs - 1
    WHERE OLD.usage_info IS NOT NULL AND organization_id = OLD.organization_id AND call_type = OLD.call_type
      AND channel = coalesce(OLD.channel, '');
  RETURN OLD;
END $$;

CREATE TRIGGER workflow_runs_inserted AFTER INSERT ON workflow_runs FOR EACH ROW EXECUTE FUNCTION workflow_runs_counted();
CREATE TRIGGER workflow_runs_usage_changed AFTER UPDATE OF usage_info ON workflow_runs
  FOR EACH ROW EXECUTE FUNCTION workflow_runs_counted();
CREATE TRIGGER workflow_runs_deleted AFTER DELETE ON workflow_runs FOR EACH ROW EXECUTE FUNCTION workflow_runs_counted();
