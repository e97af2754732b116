-- Telephony configurations (one provider account each), their trunks and their phone numbers.

CREATE TABLE telephony_configurations (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL,
  provider TEXT NOT NULL
    CHECK (provider IN ('ari', 'cloudonix', 'exotel', 'plivo', 'telnyx', 'twilio', 'vobiz', 'vonage', 'whatsapp')),
  -- JSON object; every sensitive value in it is sealed with the master key (AES-256-GCM, 'v1:...').
  credentials TEXT NOT NULL,
  is_default_outbound INTEGER NOT NULL DEFAULT 0,
  -- Set by the ARI connection manager; cleared only by the reactivate endpoint.
  inactive INTEGER NOT NULL DEFAULT 0,
  inactive_since TEXT,
  inactive_reason TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (organization_id, name)
);
-- At most one default outbound configuration per organization, whatever the code does.
CREATE UNIQUE INDEX telephony_configurations_one_default
  ON telephony_configurations(organization_id) WHERE is_default_outbound = 1;
CREATE INDEX telephony_configurations_provider ON telephony_configurations(provider, inactive);

CREATE TABLE trunks (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  telephony_configuration_id INTEGER NOT NULL REFERENCES telephony_configurations(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  settings TEXT NOT NULL DEFAULT '{}',
  -- The provider's own id of the trunk; never shown.
  external_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (telephony_configuration_id, name)
);

CREATE TABLE phone_numbers (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  telephony_configuration_id INTEGER NOT NULL REFERENCES telephony_configurations(id) ON DELETE CASCADE,
  address TEXT NOT NULL,
  address_normalized TEXT NOT NULL,
  address_type TEXT NOT NULL CHECK (address_type IN ('pstn', 'sip_uri', 'sip_extension')),
  country_code TEXT,
  label TEXT,
  inbound_workflow_id INTEGER,
  telephony_trunk_id INTEGER REFERENCES trunks(id),
  is_active INTEGER NOT NULL DEFAULT 1,
  is_default_caller_id INTEGER NOT NULL DEFAULT 0,
  extra_metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (organization_id, address_normalized)
);
CREATE UNIQUE INDEX phone_numbers_one_default_caller
  ON phone_numbers(telephony_configuration_id) WHERE is_default_caller_id = 1;
CREATE INDEX phone_numbers_configuration ON phone_numbers(telephony_configuration_id, id);
CREATE INDEX phone_numbers_trunk ON phone_numbers(telephony_trunk_id);
