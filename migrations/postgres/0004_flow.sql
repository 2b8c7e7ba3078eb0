-- The hive's workflow: every node transition of a ticket is a checkpoint, and the ticket keeps
-- the accumulated state its next node resumes from.
ALTER TABLE tickets ADD COLUMN flow TEXT;

CREATE TABLE checkpoints (
    id          BIGSERIAL PRIMARY KEY,
    ticket_id   BIGINT NOT NULL REFERENCES tickets (id),
    node        TEXT    NOT NULL,
    attempt     BIGINT NOT NULL,
    inputs      TEXT    NOT NULL,
    outputs     TEXT    NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX checkpoints_ticket ON checkpoints (ticket_id, id);

-- Slash commands and dashboard interventions: who, when, what, and what came of it.
CREATE TABLE commands (
    id          BIGSERIAL PRIMARY KEY,
    repo        TEXT    NOT NULL,
    issue       BIGINT NOT NULL,
    ticket_id   BIGINT REFERENCES tickets (id),
    source      TEXT    NOT NULL,             -- comment:<id> | button:<check run> | dashboard
    author      TEXT    NOT NULL,
    command     TEXT    NOT NULL,
    permission  TEXT    NOT NULL,             -- what the author had
    outcome     TEXT    NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX commands_ticket ON commands (ticket_id);
CREATE UNIQUE INDEX commands_once ON commands (source, command);

-- What people asked of a ticket (approve, abort, feedback, plan, retry, rebase), consumed by
-- the ticket's run at its next node boundary.
CREATE TABLE signals (
    id           BIGSERIAL PRIMARY KEY,
    ticket_id    BIGINT NOT NULL REFERENCES tickets (id),
    kind         TEXT    NOT NULL,
    data         TEXT    NOT NULL DEFAULT '{}',
    author       TEXT    NOT NULL,
    created_at   BIGINT NOT NULL,
    consumed_at  BIGINT
);
CREATE INDEX signals_pending ON signals (ticket_id, consumed_at);
