-- pgpush schema, part 4: cancelling and pruning, as functions so that roles
-- can be given exactly these powers and no more.

-- Cancels notifications not yet claimed; returns the ids it cancelled. A row
-- already being sent cannot be recalled from APNs, so it is left alone.
CREATE FUNCTION pgpush.cancel(ids bigint[]) RETURNS SETOF bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pgpush AS $$
    UPDATE pgpush.notifications
       SET status = 'cancelled', finished_at = now(), updated_at = now()
     WHERE id = ANY(cancel.ids) AND status = 'queued'
    RETURNING id
$$;
REVOKE ALL ON FUNCTION pgpush.cancel(bigint[]) FROM PUBLIC;

-- Deletes up to batch_size finished rows older than `older_than`, and their
-- error rows, in one short transaction; returns how many notifications went.
-- Callers loop until it returns 0, so no statement holds locks for long.
CREATE FUNCTION pgpush.prune(older_than interval, batch_size integer DEFAULT 5000) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pgpush AS $$
DECLARE
    deleted integer;
BEGIN
    WITH doomed AS (
        SELECT id FROM pgpush.notifications
         WHERE finished_at < now() - older_than
         ORDER BY finished_at
         LIMIT batch_size
         FOR UPDATE SKIP LOCKED
    ), gone AS (
        DELETE FROM pgpush.notifications n USING doomed WHERE n.id = doomed.id RETURNING n.id
    )
    SELECT count(*) INTO deleted FROM gone;

    DELETE FROM pgpush.delivery_errors
     WHERE id IN (SELECT id FROM pgpush.delivery_errors WHERE created_at < now() - older_than
                   ORDER BY created_at LIMIT batch_size);
    RETURN deleted;
END
$$;
REVOKE ALL ON FUNCTION pgpush.prune(interval, integer) FROM PUBLIC;
