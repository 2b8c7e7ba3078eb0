-- A job asked for again while it runs (a signal, a requeue at the tail) runs once more after it
-- finishes, no earlier than this time, instead of the request being lost to the one-live-job rule.
ALTER TABLE jobs ADD COLUMN again_after INTEGER;
