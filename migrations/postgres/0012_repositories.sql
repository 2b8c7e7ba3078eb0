-- Repositories by GitHub's repository id. Everywhere else a repository is named `owner/name`
-- (for display and lookups); this table says which repository holds each name now. When GitHub
-- sends a name under another id (the repository was deleted and made again, or another one
-- renamed or moved into the name), the old holder's rows are renamed out of its way, to
-- `owner/name.gone-<id>`: the newcomer inherits no ticket, memory, command or question. When an
-- id comes under a new name (renamed, transferred), its rows follow it. Rows from before this
-- table belong to the first id seen under their name.
CREATE TABLE repositories (
    id          BIGINT PRIMARY KEY,               -- GitHub's repository id
    full_name   TEXT    NOT NULL,             -- the name it holds now (or its .gone- name)
    seen_at     BIGINT NOT NULL
);
CREATE INDEX repositories_name ON repositories (full_name);
