-- The memory lifecycle: which step of its ticket produced an entry (`plan`, `tests`,
-- `attempt-N`, `review`), so that a failed step demotes what it produced; the highest stability
-- the entry may reach (`ceiling`: Derived for opinions, Canonical for observed facts, Ephemeral
-- once a failed step demoted it, so that it never rises again); the files it is about (`paths`,
-- one per line), by which later tickets are given what is relevant to them.
ALTER TABLE memory_entries ADD COLUMN step TEXT NOT NULL DEFAULT '';
ALTER TABLE memory_entries ADD COLUMN ceiling TEXT NOT NULL DEFAULT 'Canonical';
ALTER TABLE memory_entries ADD COLUMN paths TEXT NOT NULL DEFAULT '';
-- The Critic's findings were kept as if they were facts: they are opinions, held at Derived.
UPDATE memory_entries
   SET kind = 'review_opinion', ceiling = 'Derived',
       stability = CASE WHEN stability = 'Ephemeral' THEN 'Ephemeral' ELSE 'Derived' END
 WHERE kind = 'review_finding';
-- What failed tickets produced is not to be trusted.
UPDATE memory_entries
   SET stability = 'Ephemeral', ceiling = 'Ephemeral'
 WHERE ticket_id IN (SELECT id FROM tickets WHERE state = 'Failed');
