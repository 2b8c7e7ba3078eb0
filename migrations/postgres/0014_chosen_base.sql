-- The branch a ticket's change targets when its issue chose one (`base:` in the issue, or
-- `/hive base <branch>` before the plan): it comes before `.github/hive.yml`'s `base` and the
-- repository's default branch (`base_branch`, as the label found it). NULL: none was chosen.
ALTER TABLE tickets ADD COLUMN chosen_base TEXT;
