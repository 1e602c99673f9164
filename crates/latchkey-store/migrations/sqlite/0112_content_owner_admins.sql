-- The administrators of a content owner (issue 23): the accounts that decide which service accounts act for it.
CREATE TABLE content_owner_admins (
    owner_id TEXT NOT NULL REFERENCES content_owners(id) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    added_at INTEGER NOT NULL,
    PRIMARY KEY (owner_id, user_id)
);
CREATE INDEX content_owner_admins_user ON content_owner_admins(user_id);
