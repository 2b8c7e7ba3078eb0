-- What a command answered, in words for people (the dashboard shows it under the ticket's
-- interventions once a worker has carried the command out).
ALTER TABLE commands ADD COLUMN reply TEXT;
