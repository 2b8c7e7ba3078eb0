-- Which run of the ticket is the current one: bumped each time a Failed ticket starts over. A
-- job writes the ticket's flow only while the run it started with is still the current one, so
-- a job that outlives its run (an abort still tidying up when the issue is relabelled) cannot
-- hand its old flow to the next run.
ALTER TABLE tickets ADD COLUMN run INTEGER NOT NULL DEFAULT 0;
