-- cutover participant kit, PostgreSQL adapter: schema version 2.
-- The change index covers seq > 0 only (every stored record has seq >= 1;
-- the CHECK says so), and the export's change scan says seq > 0. A query
-- by id carries no such predicate, so the planner cannot answer it from
-- the change index with the id as a filter, a scan of the whole resource
-- that stale statistics make look as cheap as a primary-key probe; the
-- primary key is the only index such a query can use.
ALTER TABLE cutover_records ADD CONSTRAINT cutover_records_seq_positive CHECK (seq > 0);
DROP INDEX cutover_records_seq;
CREATE UNIQUE INDEX cutover_records_seq ON cutover_records (service, resource, seq) WHERE seq > 0;
