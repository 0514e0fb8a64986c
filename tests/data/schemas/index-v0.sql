-- A photo index as xmodal wrote it before its schema was versioned (commit a9e4eb4, PRAGMA
-- user_version 0): two 64x48 PNGs under /photos indexed with tests/fake_models.py:ColourModel,
-- their perceptual hashes cached by 'xmodal duplicates'. Made with sqlite3's iterdump().
BEGIN TRANSACTION;
CREATE TABLE captions (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    UNIQUE (file_id, text)
);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha1 TEXT,
    width INTEGER,
    height INTEGER,
    status TEXT NOT NULL CHECK (status IN ('ok', 'skipped')),
    reason TEXT,
    updated_at REAL NOT NULL
);
INSERT INTO "files" VALUES(1,'/photos/photos/blue.png',139,1600000000000000000,'34df3747289be5036d5735e4f1557cf6c6f48b25',64,48,'ok',NULL,1.7966136409147963524e+09);
INSERT INTO "files" VALUES(2,'/photos/photos/red.png',139,1600000000000000000,'c1744ab06e8f1caea23ef022d130c7c891f2b5ef',64,48,'ok',NULL,1.79661364091518855092e+09);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('roots','["/photos/photos"]');
INSERT INTO "meta" VALUES('generation','2');
INSERT INTO "meta" VALUES('model','test-colour-v1');
INSERT INTO "meta" VALUES('model_spec','');
INSERT INTO "meta" VALUES('dim','4');
CREATE TABLE photo_hashes (
    sha1 TEXT PRIMARY KEY,
    phash TEXT,
    phash_mirror TEXT,
    reason TEXT,
    computed_at REAL NOT NULL
);
INSERT INTO "photo_hashes" VALUES('34df3747289be5036d5735e4f1557cf6c6f48b25','8000000000000000','8000000000000000',NULL,1.7966136414230792522e+09);
INSERT INTO "photo_hashes" VALUES('c1744ab06e8f1caea23ef022d130c7c891f2b5ef','8000000000000000','8000000000000000',NULL,1.7966136414230792522e+09);
CREATE TABLE photo_meta (
    file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    taken_at TEXT,
    utc_offset TEXT,
    date_source TEXT,
    camera_make TEXT,
    camera_model TEXT,
    camera TEXT,
    lat REAL,
    lon REAL,
    orientation INTEGER,
    city TEXT,
    region TEXT,
    country TEXT,
    country_code TEXT,
    camera_key TEXT
);
INSERT INTO "photo_meta" VALUES(1,1,'2020-09-13T12:26:40','+00:00','mtime',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "photo_meta" VALUES(2,1,'2020-09-13T12:26:40','+00:00','mtime',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE photo_places (
    name TEXT NOT NULL,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    PRIMARY KEY (name, file_id)
) WITHOUT ROWID;
CREATE TABLE vectors (
    file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    vec BLOB NOT NULL
);
INSERT INTO "vectors" VALUES(1,'test-colour-v1',X'9FBC223D9FBC223DB9467E3F4B7DCF3D');
INSERT INTO "vectors" VALUES(2,'test-colour-v1',X'B9467E3F9FBC223D9FBC223D4B7DCF3D');
CREATE INDEX files_sha1 ON files(sha1);
CREATE INDEX photo_meta_taken ON photo_meta(taken_at);
CREATE INDEX photo_meta_position ON photo_meta(lat, lon);
CREATE INDEX photo_meta_camera ON photo_meta(camera_key);
CREATE INDEX photo_places_file ON photo_places(file_id);
COMMIT;
