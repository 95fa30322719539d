-- Least-privilege roles for pgpush. Run once after the first `pgpush migrate`,
-- as a superuser (it creates roles and hands the schema to pgpush_owner).
-- Safe to run again; running it again after a newer pgpush also replaces the
-- grants of an older version.
--
--   pgpush_owner    owns schema pgpush and everything in it; `pgpush migrate`
--                   runs as a login role that is a member of it
--   pgpush_app      applications: enqueue, read and cancel the rows of the
--                   apps pgpush.grant_app gave them, clear re-registered tokens
--   pgpush_worker   `pgpush run`: claim, record outcomes, heartbeat, prune
--   pgpush_monitor  dashboards and `pgpush status`: states, counts, reasons;
--                   no payloads or device tokens
--
-- They are group roles without LOGIN; grant them to login roles, one group
-- per login role:
--   CREATE ROLE pgpush_migrator LOGIN PASSWORD '…' IN ROLE pgpush_owner;
--   CREATE ROLE pgpush_run      LOGIN PASSWORD '…' IN ROLE pgpush_worker;
--   CREATE ROLE shop_backend    LOGIN PASSWORD '…' IN ROLE pgpush_app;
--   SELECT pgpush.grant_app('shop_backend', 'shop');   -- '*' for every app
-- An application role without any grant sees and changes nothing.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgpush_owner') THEN CREATE ROLE pgpush_owner NOLOGIN; END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgpush_app') THEN CREATE ROLE pgpush_app NOLOGIN; END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgpush_worker') THEN CREATE ROLE pgpush_worker NOLOGIN; END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgpush_monitor') THEN CREATE ROLE pgpush_monitor NOLOGIN; END IF;
    -- Earlier versions made every application a monitor, which now reads
    -- every app's rows: an application gets its own, narrower grants below.
    IF pg_has_role('pgpush_app', 'pgpush_monitor', 'MEMBER') THEN REVOKE pgpush_monitor FROM pgpush_app; END IF;
END
$$;

-- Everything in schema pgpush belongs to pgpush_owner, so that migrations run
-- as it (not as the worker, which may not change the schema) and the
-- SECURITY DEFINER functions run as the owner of the tables they change.
-- Identity sequences follow their tables.
ALTER SCHEMA pgpush OWNER TO pgpush_owner;
DO $$
DECLARE
    object record;
BEGIN
    FOR object IN
        SELECT c.oid::regclass AS name, c.relkind FROM pg_class c
         WHERE c.relnamespace = 'pgpush'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
           -- Not what belongs to another object (an identity sequence, an index); a
           -- partition is changed on its own, since its table's change does not reach it.
           AND (c.relispartition
                OR NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                                  AND d.refobjid <> c.oid AND d.deptype IN ('a', 'i')))
    LOOP
        EXECUTE format('ALTER %s %s OWNER TO pgpush_owner',
                       CASE object.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                           WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, object.name);
    END LOOP;
    FOR object IN SELECT p.oid::regprocedure AS name FROM pg_proc p WHERE p.pronamespace = 'pgpush'::regnamespace LOOP
        EXECUTE format('ALTER ROUTINE %s OWNER TO pgpush_owner', object.name);
    END LOOP;
END
$$;

-- The grants and row-level security of the three groups: defined in
-- sql/007_per_app_access.sql, where the comment says who may do what.
SELECT pgpush.apply_role_privileges();
-- The same for the partitions and tables of sql/009_history_partitions.sql, on a
-- database migrated that far.
DO $$
BEGIN
    IF to_regprocedure('pgpush.apply_history_privileges()') IS NOT NULL THEN
        PERFORM pgpush.apply_history_privileges();
    END IF;
END
$$;
