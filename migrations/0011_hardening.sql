-- A signed upload URL uploads once: the PUT claims its upload row (receiving_since) before writing, and a completed or
-- claimed upload refuses another PUT. A failed PUT releases the claim.
ALTER TABLE uploads ADD COLUMN receiving_since TEXT;
