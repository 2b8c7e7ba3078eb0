-- Initial schema (SQLite dialect). Times are Unix milliseconds; JSON is stored as TEXT.

CREATE TABLE installations (
    id          INTEGER PRIMARY KEY,          -- GitHub's installation id
    account     TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    deleted_at  INTEGER
);

CREATE TABLE deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id     TEXT    NOT NULL UNIQUE,  -- X-GitHub-Delivery, kept on redelivery
    event           TEXT    NOT NULL,
    action          TEXT,
    installation_id INTEGER,
    repo            TEXT,
    status          TEXT    NOT NULL,         -- queued | ignored | processed | unparsed | rejected | failed
    detail          TEXT,
    received_at     INTEGER NOT NULL,
    processed_at    INTEGER
);
CREATE INDEX deliveries_status ON deliveries (status);

-- Bodies apart from the rows whose status changes: written once, never rewritten.
CREATE TABLE delivery_payloads (
    delivery_id     TEXT    NOT NULL PRIMARY KEY REFERENCES deliveries (delivery_id),
    payload         TEXT    NOT NULL
);

CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    kind         TEXT    NOT NULL,            -- delivery | ticket
    key          TEXT    NOT NULL,            -- what the job is about (delivery id, ticket row id)
    payload      TEXT    NOT NULL DEFAULT '{}',
    status       TEXT    NOT NULL,            -- queued | running | done | failed
    attempts     INTEGER NOT NULL DEFAULT 0,
    run_after    INTEGER NOT NULL,
    lease_owner  TEXT,
    lease_until  INTEGER,
    last_error   TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
-- At most one live job per subject. Finished jobs are deleted (their results live on the
-- delivery or ticket); failed ones stay for people to inspect.
CREATE UNIQUE INDEX jobs_live_key ON jobs (kind, key) WHERE status IN ('queued', 'running');
-- Claims scan live jobs only, oldest first, however long the history.
CREATE INDEX jobs_live ON jobs (id) WHERE status IN ('queued', 'running');

CREATE TABLE tickets (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    repo              TEXT    NOT NULL,
    number            INTEGER NOT NULL,       -- the n of T-n, per repository
    issue_number      INTEGER NOT NULL,
    installation_id   INTEGER NOT NULL,
    title             TEXT    NOT NULL,
    body              TEXT    NOT NULL,
    base_branch       TEXT    NOT NULL,
    state             TEXT    NOT NULL,
    status_comment_id INTEGER,
    pr_number         INTEGER,
    head_sha          TEXT,
    detail            TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (repo, number),
    UNIQUE (repo, issue_number)
);

CREATE TABLE ticket_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
    at         INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    data       TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX ticket_events_ticket ON ticket_events (ticket_id, id);
