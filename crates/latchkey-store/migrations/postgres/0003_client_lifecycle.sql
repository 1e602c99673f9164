-- Client lifecycle: when a client last got tokens (written at most once an hour), so that unused clients can be
-- deleted automatically; deleted clients are purged once their restore window has passed.
ALTER TABLE clients ADD COLUMN last_used_at BIGINT;
CREATE INDEX clients_deleted ON clients(deleted_at) WHERE deleted_at IS NOT NULL;

-- App Check (mobile-platform clients): the state in force, the change on its way and when it takes effect; the
-- hash of the debug provider's secret. Clients switched on before this state machine start out enabled.
ALTER TABLE clients ADD COLUMN app_check_state TEXT NOT NULL DEFAULT 'disabled';
ALTER TABLE clients ADD COLUMN app_check_pending TEXT;
ALTER TABLE clients ADD COLUMN app_check_pending_at BIGINT;
ALTER TABLE clients ADD COLUMN app_check_debug_hash BYTEA;
UPDATE clients SET app_check_state = 'enabled' WHERE app_check = TRUE;

-- Token requests of clients with App Check on, counted per client, hour (Unix seconds of its start) and category.
CREATE TABLE app_check_metrics (
    client_id TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    hour      BIGINT NOT NULL,
    category  TEXT NOT NULL,
    count     BIGINT NOT NULL,
    PRIMARY KEY (client_id, hour, category)
);

-- Owner verification (browser-extension clients): when it last succeeded, and the built-in listing directory:
-- a listing's publisher is one developer (publisher_email) or a group (group_name with its members, a JSON array).
ALTER TABLE clients ADD COLUMN ownership_verified_at BIGINT;
CREATE TABLE listings (
    item_id         TEXT PRIMARY KEY,
    publisher_email TEXT,
    group_name      TEXT,
    members         TEXT NOT NULL DEFAULT '[]',
    created_at      BIGINT NOT NULL
);
