-- Knowledge the hive keeps per repository, promoted Ephemeral → Derived → Verified → Canonical
-- as its ticket moves on; only Canonical entries feed later tickets.
CREATE TABLE memory_entries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    repo        TEXT    NOT NULL,
    ticket_id   INTEGER REFERENCES tickets (id),
    kind        TEXT    NOT NULL,             -- plan | gate_command | review_finding | note
    text        TEXT    NOT NULL,
    stability   TEXT    NOT NULL,             -- Ephemeral | Derived | Verified | Canonical
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX memory_entries_repo ON memory_entries (repo, stability);
CREATE INDEX memory_entries_ticket ON memory_entries (ticket_id);
