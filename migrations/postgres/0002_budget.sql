-- The budget ledger: what each role of a ticket spent.
CREATE TABLE budget (
    ticket_id          BIGINT NOT NULL REFERENCES tickets (id),
    role               TEXT    NOT NULL,
    calls              BIGINT NOT NULL,
    prompt_tokens      BIGINT NOT NULL,
    completion_tokens  BIGINT NOT NULL,
    cost_usd           DOUBLE PRECISION    NOT NULL,
    millis             BIGINT NOT NULL,
    PRIMARY KEY (ticket_id, role)
);
