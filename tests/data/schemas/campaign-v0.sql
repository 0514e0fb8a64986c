-- A campaign as xmodal wrote it before its schema was versioned (commit a9e4eb4, PRAGMA
-- user_version 0, meta schema_version 1): one worker, one pair, one HIT. Made with iterdump().
BEGIN TRANSACTION;
CREATE TABLE annotators (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL);
CREATE TABLE assignments (
    id INTEGER PRIMARY KEY,
    hit_id INTEGER NOT NULL REFERENCES hits(id),
    worker_id INTEGER NOT NULL REFERENCES workers(id),
    status TEXT NOT NULL CHECK (status IN ('active', 'expired', 'review', 'accepted',
                                           'rejected')),
    started_at REAL NOT NULL,
    submitted_at REAL,
    draft TEXT, active_at REAL, draft_version INTEGER NOT NULL DEFAULT 0,
    UNIQUE (hit_id, worker_id));
CREATE TABLE external_assignments (
    assignment_id INTEGER PRIMARY KEY REFERENCES assignments(id),
    platform TEXT NOT NULL, external_id TEXT NOT NULL, work_s REAL,
    UNIQUE (platform, external_id));
CREATE TABLE external_workers (
    worker_id INTEGER PRIMARY KEY REFERENCES workers(id),
    platform TEXT NOT NULL, external_id TEXT NOT NULL, UNIQUE (platform, external_id));
CREATE TABLE hit_items (
    hit_id INTEGER NOT NULL REFERENCES hits(id),
    position INTEGER NOT NULL,
    pair_id INTEGER NOT NULL REFERENCES pairs(id),
    -- judge: a pair to judge, gold_pos / gold_neg: a known positive / negative (the check)
    role TEXT NOT NULL CHECK (role IN ('judge', 'gold_pos', 'gold_neg')),
    PRIMARY KEY (hit_id, position),
    UNIQUE (hit_id, pair_id));
INSERT INTO "hit_items" VALUES(1,0,1,'judge');
CREATE TABLE hits (
    id INTEGER PRIMARY KEY, round INTEGER NOT NULL, replication INTEGER NOT NULL,
    created_at REAL NOT NULL);
INSERT INTO "hits" VALUES(1,1,3,1.79661364814374494556e+09);
CREATE TABLE images (id TEXT PRIMARY KEY, path TEXT);
INSERT INTO "images" VALUES('img1','/photos/red.png');
CREATE TABLE judgments (
    assignment_id INTEGER NOT NULL REFERENCES assignments(id),
    pair_id INTEGER NOT NULL REFERENCES pairs(id),
    answer INTEGER CHECK (answer IS NULL OR answer BETWEEN 1 AND 4),
    reason TEXT,
    PRIMARY KEY (assignment_id, pair_id));
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('schema_version','1');
CREATE TABLE pairs (
    id INTEGER PRIMARY KEY,
    image_id TEXT NOT NULL REFERENCES images(id),
    text_id TEXT NOT NULL REFERENCES texts(id),
    kind TEXT NOT NULL CHECK (kind IN ('candidate', 'original', 'gold_pos', 'gold_neg')),
    round INTEGER NOT NULL,
    UNIQUE (image_id, text_id));
INSERT INTO "pairs" VALUES(1,'img1','t1','candidate',1);
CREATE TABLE proposals (
    annotator_id INTEGER NOT NULL REFERENCES annotators(id),
    query_id INTEGER NOT NULL REFERENCES queries(id),
    rank INTEGER NOT NULL,
    image_id TEXT NOT NULL,
    text_id TEXT NOT NULL,
    PRIMARY KEY (annotator_id, query_id, rank));
CREATE TABLE queries (
    id INTEGER PRIMARY KEY,
    direction TEXT NOT NULL CHECK (direction IN ('i2t', 't2i')),
    item TEXT NOT NULL,
    round INTEGER NOT NULL,
    UNIQUE (direction, item));
CREATE TABLE results (name TEXT PRIMARY KEY, json TEXT NOT NULL,
    created_at REAL NOT NULL);
CREATE TABLE reviews (
    assignment_id INTEGER PRIMARY KEY REFERENCES assignments(id),
    reviewer_id INTEGER REFERENCES workers(id),
    decision TEXT NOT NULL CHECK (decision IN ('accept', 'reject')),
    note TEXT, decided_at REAL NOT NULL);
CREATE TABLE texts (id TEXT PRIMARY KEY, text TEXT NOT NULL);
INSERT INTO "texts" VALUES('t1','a red square');
CREATE TABLE workers (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token_sha256 TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('worker', 'reviewer')), created_at REAL NOT NULL);
INSERT INTO "workers" VALUES(1,'alice','81fb9f1535552a3412a322548c3c999e6f0b803f72a63a9069e111401f1aaa20','worker',1.79661364814322590827e+09);
CREATE INDEX proposals_pair ON proposals(image_id, text_id);
CREATE INDEX hit_items_pair ON hit_items(pair_id);
CREATE INDEX assignments_hit ON assignments(hit_id, status);
CREATE INDEX assignments_worker ON assignments(worker_id, status);
COMMIT;
