-- A client's secrets (issue 25): up to two, so that a secret can be replaced while both work. A JSON list of
-- {id, hash (hex of SHA-256), hint, created_at, disabled_at}, written by the store in exactly this form (a change
-- is made only if the list is still the one read). The existing secret becomes the first of each list;
-- `secret_hash` is no longer read.
ALTER TABLE clients ADD COLUMN secrets TEXT NOT NULL DEFAULT '[]';
UPDATE clients SET secrets = '[{"id":"cs_initial","hash":"' || lower(hex(secret_hash)) || '","hint":null,"created_at":'
    || created_at || ',"disabled_at":null}]'
WHERE length(secret_hash) > 0;
