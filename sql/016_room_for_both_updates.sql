-- pgpush schema, part 16: room on each page of the queue for both of its rows' updates.
--
-- Migration 008 left 10% of each page free so that a row's claim and outcome could write
-- their new versions beside the old one, where PostgreSQL logs only the bytes that changed.
-- That was measured with claims and outcomes close behind the inserts. At steady rates an
-- outcome comes a few hundred milliseconds after its claim, while new rows still fill the
-- page, and the 10% ran out: about one row in three had an update that moved to another page,
-- logging the whole row and a lock record (pg_waldump of a 100/s run). With 30% free, WAL
-- per notification at steady rates went from 1.34-1.36 kB to 1.21-1.24 kB (BENCHMARKS.md,
-- 2026-12-05). The table takes more pages for the same rows (about 9 in 7).
--
-- Only the default set by 008 changes: a fillfactor an operator chose is left as it is. New
-- partitions follow pgpush.history_partitioning; existing ones are changed here, and fill
-- their pages from now on (rows already written stay where they are). Setting it takes a
-- SHARE UPDATE EXCLUSIVE lock: inserts, claims and outcomes go on. Safe to run again.

UPDATE pgpush.history_partitioning
   SET notifications_storage = array_append(
           array(SELECT o FROM unnest(notifications_storage) AS o WHERE o NOT LIKE 'fillfactor=%'),
           'fillfactor=70')
 WHERE 'fillfactor=90' = ANY (notifications_storage)
    OR NOT EXISTS (SELECT FROM unnest(notifications_storage) AS o WHERE o LIKE 'fillfactor=%');

DO $$
DECLARE
    part regclass;
BEGIN
    FOR part IN
        SELECT c.oid::regclass
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'pgpush.notifications'::regclass
           AND ('fillfactor=90' = ANY (coalesce(c.reloptions, '{}'))
                OR NOT EXISTS (SELECT FROM unnest(c.reloptions) AS o WHERE o LIKE 'fillfactor=%'))
    LOOP
        EXECUTE format('ALTER TABLE %s SET (fillfactor = 70)', part);
    END LOOP;
END
$$;
