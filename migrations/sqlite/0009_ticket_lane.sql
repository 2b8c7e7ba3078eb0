-- The lane a ticket's jobs run in (NULL: none): `serial:owner/name` once a rebase conflict sent
-- the ticket back to the queue (conflict strategy C). Every job of the ticket is then queued with
-- it as its scope, so the repository's requeued tickets run one at a time until they land.
ALTER TABLE tickets ADD COLUMN lane TEXT;
