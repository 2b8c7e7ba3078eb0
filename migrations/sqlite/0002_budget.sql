-- The budget ledger: what each role of a ticket spent.
CREATE TABLE budget (
    ticket_id          INTEGER NOT NULL REFERENCES tickets (id),
    role               TEXT    NOT NULL,
    calls              INTEGER NOT NULL,
    prompt_tokens      INTEGER NOT NULL,
    completion_tokens  INTEGER NOT NULL,
    cost_usd           REAL    NOT NULL,
    millis             INTEGER NOT NULL,
    PRIMARY KEY (ticket_id, role)
);
