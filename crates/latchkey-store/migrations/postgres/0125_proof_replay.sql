-- DPoP proofs' single-use values (their jti, the server nonces they carry), off the durable write path. An
-- unlogged table is not written to the WAL: it costs no flush, is not replicated to a standby, and is emptied
-- when the server restarts after a crash. `proof_replay_floor` says from when the records are complete; it is
-- unlogged too, so it is lost with them, and finding it empty is how a loss (a crash, a failover, a restore) is
-- noticed: the first recording after it sets the moment anew, and what may have been used before it is refused
-- by its time (latchkey_core::flow::proof). Service-account assertions stay in the durable `replay` table.
CREATE UNLOGGED TABLE proof_replay (
    key_hash BYTEA PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
CREATE UNLOGGED TABLE proof_replay_floor (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    complete_since BIGINT NOT NULL
);
-- A new database lost nothing: its records are complete from the start. One that recorded single-use values
-- before (in `replay`) may hold proofs used in the last minute: its records are complete from now.
INSERT INTO proof_replay_floor (complete_since)
SELECT CASE WHEN EXISTS (SELECT 1 FROM replay) THEN CAST(extract(epoch FROM now()) AS BIGINT) ELSE 0 END;
