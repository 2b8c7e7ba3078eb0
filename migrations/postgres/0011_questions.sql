-- Questions to the read-only agent (`/hive ask`): what was asked, where, by whom, and the
-- answer once given. Earlier answers on the same issue or pull request are the context of a
-- follow-up question.
CREATE TABLE questions (
    id              BIGSERIAL PRIMARY KEY,
    source          TEXT    NOT NULL UNIQUE,  -- the command's source: comment:<id>#<line>
    repo            TEXT    NOT NULL,
    installation_id BIGINT NOT NULL,
    issue           BIGINT NOT NULL,             -- the issue's or pull request's number
    pull_request    BIGINT NOT NULL,             -- 1: asked on a pull request (its head is read)
    thread          BIGINT,                      -- the review thread it was asked in, if any
    base_branch     TEXT    NOT NULL,
    author          TEXT    NOT NULL,
    question        TEXT    NOT NULL,
    answer          TEXT,                      -- the answer itself (what a follow-up is told)
    reply           TEXT,                      -- the reply as posted: answer, warnings, spend
    commit_sha      TEXT,                      -- the commit the answer read
    spend           TEXT,                      -- JSON: what the answer cost
    created_at      BIGINT NOT NULL,
    answered_at     BIGINT,
    error           TEXT                        -- why it could not be answered, if so
);
CREATE INDEX questions_issue ON questions (repo, issue);
