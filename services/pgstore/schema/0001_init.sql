-- cutover participant kit, PostgreSQL adapter: schema version 1.
-- One row per resource: its authority record (the routing revision that
-- made this store what it is for the resource) and its change sequence.
CREATE TABLE cutover_resources (
    service  text   NOT NULL,
    resource text   NOT NULL,
    rev      bigint NOT NULL DEFAULT 0,
    role     text   NOT NULL DEFAULT '',
    deletes  text   NOT NULL DEFAULT '',
    until_ms bigint NOT NULL DEFAULT 0,
    last_seq bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (service, resource)
);

-- Records and tombstones (deleted = true, data and refs NULL).
CREATE TABLE cutover_records (
    service    text    NOT NULL,
    resource   text    NOT NULL,
    id         text    NOT NULL,
    kind       text    NOT NULL,
    version    bigint  NOT NULL,
    seq        bigint  NOT NULL,
    created_at bigint  NOT NULL,
    updated_at bigint  NOT NULL,
    deleted    boolean NOT NULL,
    deleted_at bigint  NOT NULL,
    data       bytea,
    refs       text[],
    PRIMARY KEY (service, resource, id)
);
-- Export: the change index (historical up to the sync token, delta after).
CREATE UNIQUE INDEX cutover_records_seq ON cutover_records (service, resource, seq);
-- User lists and validation's slices: live records by creation time.
CREATE INDEX cutover_records_live ON cutover_records (service, resource, created_at, id) WHERE NOT deleted;

-- Per-slice digests of the live records, kept in the writing transaction.
CREATE TABLE cutover_digests (
    service  text   NOT NULL,
    resource text   NOT NULL,
    slice    bigint NOT NULL,
    count    bigint NOT NULL,
    hash     bytea  NOT NULL,
    PRIMARY KEY (service, resource, slice)
);
