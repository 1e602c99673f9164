-- Shared Signals (issue 22): one stream per client (the app's backend receives its security events), the
-- accounts a stream's receiver asked to leave out, and the outbox of SETs to deliver, written in the same
-- transaction as the change that causes them.
CREATE TABLE ssf_streams (
    stream_id        TEXT PRIMARY KEY,
    client_id        TEXT NOT NULL UNIQUE REFERENCES clients(client_id) ON DELETE CASCADE,
    method           TEXT NOT NULL,
    endpoint_url     TEXT,
    -- The push Authorization header, encrypted under the system secrets (never shown back).
    push_auth        BYTEA,
    events_requested TEXT NOT NULL,
    subject_format   TEXT NOT NULL,
    status           TEXT NOT NULL,
    reason           TEXT,
    description      TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    verified_at      BIGINT
);

CREATE TABLE ssf_excluded (
    stream_id TEXT NOT NULL REFERENCES ssf_streams(stream_id) ON DELETE CASCADE,
    user_id   TEXT NOT NULL,
    PRIMARY KEY (stream_id, user_id)
);

-- One row per SET. Its jti is the stream id and the row id (an identity: never used again, so no jti is
-- either); its subject is kept as made (an account's email outlives the account's deletion until the SET is
-- delivered).
CREATE TABLE set_deliveries (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream_id      TEXT NOT NULL REFERENCES ssf_streams(stream_id) ON DELETE CASCADE,
    txn            TEXT NOT NULL,
    subject_format TEXT NOT NULL,
    subject        TEXT NOT NULL,
    event_type     TEXT NOT NULL,
    payload        TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    state          TEXT NOT NULL DEFAULT 'pending',
    attempts       BIGINT NOT NULL DEFAULT 0,
    next_at        BIGINT NOT NULL,
    lease_until    BIGINT NOT NULL DEFAULT 0,
    last_error     TEXT,
    done_at        BIGINT
);
-- Due rows; the pending rows of one stream and subject, oldest first (the order check); a stream's rows by age
-- (its deliveries, newest first); finished rows by age (purged after 30 days).
CREATE INDEX set_deliveries_due ON set_deliveries(next_at) WHERE state = 'pending';
CREATE INDEX set_deliveries_order ON set_deliveries(stream_id, subject, id) WHERE state = 'pending';
CREATE INDEX set_deliveries_stream ON set_deliveries(stream_id, id);
CREATE INDEX set_deliveries_done ON set_deliveries(done_at) WHERE state <> 'pending';
