-- Run once by the postgres image when its data volume is new (mounted into
-- /docker-entrypoint-initdb.d by compose.yaml), as the superuser, in database
-- pgpush. It prepares what sql/roles.sql would after a migration, but before it,
-- so that `pgpush migrate` never needs a superuser:
--   - the four group roles of sql/roles.sql;
--   - schema pgpush owned by pgpush_owner: `pgpush migrate`, run as a member of
--     pgpush_owner, then creates everything as pgpush_owner, and migration 007
--     applies the groups' grants because the roles exist;
--   - one login role per group. The passwords are for this local setup only.
CREATE ROLE pgpush_owner NOLOGIN;
CREATE ROLE pgpush_app NOLOGIN;
CREATE ROLE pgpush_worker NOLOGIN;
CREATE ROLE pgpush_monitor NOLOGIN;

CREATE ROLE pgpush_migrator LOGIN PASSWORD 'migrator' IN ROLE pgpush_owner;
CREATE ROLE pgpush_run LOGIN PASSWORD 'worker' IN ROLE pgpush_worker;
-- For Grafana (deploy/grafana/pgpush.json) and `pgpush status`.
CREATE ROLE pgpush_dashboard LOGIN PASSWORD 'monitor' IN ROLE pgpush_monitor;

CREATE SCHEMA pgpush AUTHORIZATION pgpush_owner;
