-- Why Citus has its own form (ADR 30): only a Citus node has shards to hold.
--
-- Run first in a node batch's transaction, on the node Doorman believes holds the batch's
-- tenants' shards, before the batch writes those shards' tables directly (not through the
-- distributed tables, whose statements Citus plans and deparses at every call). It takes, on
-- each shard the batch may write (each tenant's shard of the receipts, payloads, fingerprints
-- and attempts), the lock Citus's own writes take on a shard's metadata before they touch its
-- placement (ShareLock, lock mode 5: AcquireMetadataLocks); a shard move or split takes
-- ExclusiveLock on every shard of the group on every node for its final switch
-- (BlockWritesToShardList). So a move either waits for this transaction to commit (and its rows
-- are caught up before the switch), or has switched before the lock is granted, and then this
-- node no longer holds the shard: the check below, made after the lock, refuses the batch, which
-- is written again through the distributed tables (forwarded to the new node by Citus). The
-- shards are locked in id order, as a move locks a group's.
--
-- The check must see a move that committed while the lock was awaited: the transaction is read
-- committed (Doorman begins it so), where each statement here takes a fresh snapshot; under
-- repeatable read the snapshot taken before the wait would still show the old placement, so it
-- refuses to run there.
--
-- SECURITY DEFINER: lock_shard_metadata is the shard tables' owner's (the migrating login's);
-- only doorman_app may call this, which already writes those rows.
CREATE OR REPLACE FUNCTION public.doorman_hold_shards(p_shards bigint[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_shards bigint[] := ARRAY(SELECT DISTINCT s FROM unnest(p_shards) AS s ORDER BY s);
BEGIN
    IF cardinality(v_shards) = 0 THEN
        RETURN;
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'doorman_hold_shards: holds shards only in a read committed transaction';
    END IF;
    PERFORM pg_catalog.lock_shard_metadata(5, v_shards);
    IF (SELECT count(*) FROM pg_catalog.pg_dist_placement AS p
         WHERE p.shardid = ANY (v_shards)
           AND p.groupid = (SELECT l.groupid FROM pg_catalog.pg_dist_local_group AS l)) <> cardinality(v_shards) THEN
        RAISE EXCEPTION 'doorman_hold_shards: a shard is no longer on this node';
    END IF;
END
$$;
