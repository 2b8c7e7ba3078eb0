-- The worker whose lease on a job ran out when another claimed it (NULL: a normal claim), so the
-- new owner can say whose work it resumes.
ALTER TABLE jobs ADD COLUMN taken_from TEXT;
