-- pgpush schema, part 3: views an operator queries directly.
-- Each reads only what its partial indexes cover, so it stays cheap with
-- millions of finished rows in the table.

-- How far behind are we: unfinished rows per app, due now or later.
CREATE VIEW pgpush.queue_depth AS
SELECT app,
       count(*) FILTER (WHERE status = 'queued' AND send_after <= now())  AS due,
       count(*) FILTER (WHERE status = 'queued' AND send_after > now())   AS scheduled,
       count(*) FILTER (WHERE status = 'sending')                        AS sending,
       coalesce(extract(epoch FROM now() - min(send_after) FILTER (WHERE status = 'queued' AND send_after <= now())), 0)
           AS oldest_due_seconds
  FROM pgpush.notifications
 WHERE status IN ('queued', 'sending')
 GROUP BY app;
COMMENT ON VIEW pgpush.queue_depth IS 'Unfinished notifications per app: due now, scheduled later, being sent, and the age of the oldest due row.';

-- What each app finished, minute by minute, over the last hour.
CREATE VIEW pgpush.throughput AS
SELECT app,
       date_trunc('minute', finished_at)            AS minute,
       count(*) FILTER (WHERE status = 'delivered') AS delivered,
       count(*) FILTER (WHERE status = 'failed')    AS failed,
       count(*) FILTER (WHERE status = 'expired')   AS expired,
       count(*) FILTER (WHERE status = 'cancelled') AS cancelled
  FROM pgpush.notifications
 WHERE finished_at >= now() - interval '1 hour'
 GROUP BY app, date_trunc('minute', finished_at);
COMMENT ON VIEW pgpush.throughput IS 'Finished notifications per app and minute, last hour.';

-- What is failing and why, over the last 24 hours.
CREATE VIEW pgpush.error_breakdown AS
SELECT app, status, reason, count(*) AS errors, max(created_at) AS last_seen
  FROM pgpush.delivery_errors
 WHERE created_at >= now() - interval '24 hours'
 GROUP BY app, status, reason;
COMMENT ON VIEW pgpush.error_breakdown IS 'Failed attempts per app, HTTP status and reason, last 24 hours.';

-- Is every worker alive: a worker that missed its heartbeats for 30 s is not.
CREATE VIEW pgpush.worker_health AS
SELECT id, host, pid, version, apps, connections, started_at, heartbeat_at,
       extract(epoch FROM now() - heartbeat_at) AS seconds_since_heartbeat,
       heartbeat_at >= now() - interval '30 seconds' AS alive,
       sent, delivered, failed, retried
  FROM pgpush.workers;
COMMENT ON VIEW pgpush.worker_health IS 'Workers with the age of their last heartbeat; alive = heartbeat in the last 30 s.';
