-- Performance (issue 7): a refresh token now carries its grant's id (latchkey_core::refresh_token), so a grant is
-- found through its primary key and its refresh hash is only compared, never searched: the unique index on
-- refresh_hash, one random page to write per issued grant, goes. Tokens issued before this version carry no id:
-- their grants are marked `legacy_refresh` and stay findable by hash through a partial index that new grants
-- never enter.
ALTER TABLE grants ADD COLUMN legacy_refresh BOOLEAN;
UPDATE grants SET legacy_refresh = TRUE;
ALTER TABLE grants DROP CONSTRAINT grants_refresh_hash_key;
CREATE UNIQUE INDEX grants_legacy_refresh ON grants(refresh_hash) WHERE legacy_refresh;
