-- What a job must wait its turn in (NULL: nothing): a delivery's repository, `owner/name`. A job
-- with a scope is not claimed while an earlier job (smaller id) of the same scope is still live,
-- so deliveries of one repository are processed one at a time in the order they arrived.
ALTER TABLE jobs ADD COLUMN scope TEXT;
-- Claims look for an earlier live job of the same scope.
CREATE INDEX jobs_live_scope ON jobs (scope, id) WHERE status IN ('queued', 'running') AND scope IS NOT NULL;
