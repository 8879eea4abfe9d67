"""Migration steps v1 to v12 (``schema.MIGRATIONS``): SQL only, each step a tuple of statements.
Never edit a released step: append a new one (``late``)."""

# Columns that several steps' tables restate as v1 wrote them (SQLite cannot alter a primary key, so a
# step makes a table again): one text each, so each step's SQL stays the one released.
# A rollout's job (v1, v2, v7) and a failed job's (v4): the sample asked, its call and its run
_JOB = """            pid        TEXT NOT NULL,
            target     TEXT NOT NULL,
            k          INTEGER NOT NULL,
            call_key   TEXT NOT NULL,
            run_id     TEXT NOT NULL,
"""
# a rollout's verdict (v1, v2, v7)
_VERDICT = """            label      TEXT NOT NULL,
            reason     TEXT NOT NULL,
            extracted  TEXT,
            created_at TEXT NOT NULL,
"""
# a call's usage and end (v1, v11, v12)
_USAGE = """            tokens_in     INTEGER NOT NULL DEFAULT 0,
            tokens_out    INTEGER NOT NULL DEFAULT 0,
            latency_s     REAL NOT NULL DEFAULT 0,
            finish_reason TEXT,
            error         TEXT,
            run_id        TEXT,
"""

STEPS: tuple[tuple[str, ...], ...] = (
    # v1: the initial schema.
    (
        """
        CREATE TABLE IF NOT EXISTS meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )
        """,
        f"""
        CREATE TABLE IF NOT EXISTS calls (
            key           TEXT PRIMARY KEY,
            provider      TEXT NOT NULL,
            model         TEXT NOT NULL,
            request       TEXT NOT NULL,
            response      TEXT,
{_USAGE}            created_at    TEXT NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS calls_run ON calls(run_id)",
        """
        CREATE TABLE IF NOT EXISTS problems (
            pid        TEXT PRIMARY KEY,
            kind       TEXT NOT NULL,
            data       TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS families (
            pid         TEXT NOT NULL,
            source      TEXT NOT NULL,
            granularity TEXT NOT NULL DEFAULT '',
            family      TEXT NOT NULL,
            released    TEXT NOT NULL,
            created_at  TEXT NOT NULL,
            updated_at  TEXT NOT NULL,
            PRIMARY KEY (pid, source, granularity)
        )
        """,
        "CREATE INDEX IF NOT EXISTS families_source ON families(source)",
        """
        CREATE TABLE IF NOT EXISTS compile_attempts (
            pid         TEXT NOT NULL,
            source      TEXT NOT NULL,
            granularity TEXT NOT NULL DEFAULT '',
            attempt     INTEGER NOT NULL,
            plan        TEXT,
            errors      TEXT NOT NULL,
            passed      INTEGER NOT NULL,
            created_at  TEXT NOT NULL,
            PRIMARY KEY (pid, source, granularity, attempt)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS reports (
            pid         TEXT NOT NULL,
            source      TEXT NOT NULL,
            granularity TEXT NOT NULL DEFAULT '',
            report      TEXT NOT NULL,
            passed      INTEGER NOT NULL,
            created_at  TEXT NOT NULL,
            PRIMARY KEY (pid, source, granularity)
        )
        """,
        f"""
        CREATE TABLE IF NOT EXISTS rollouts (
            student    TEXT NOT NULL,
{_JOB}            response   TEXT NOT NULL,
{_VERDICT}            PRIMARY KEY (student, pid, target, k, call_key)
        )
        """,
        "CREATE INDEX IF NOT EXISTS rollouts_run ON rollouts(run_id)",
        """
        CREATE TABLE IF NOT EXISTS runs (
            id          TEXT PRIMARY KEY,
            kind        TEXT NOT NULL,
            config      TEXT NOT NULL,
            started_at  TEXT NOT NULL,
            finished_at TEXT,
            status      TEXT NOT NULL,
            tokens_in   INTEGER NOT NULL DEFAULT 0,
            tokens_out  INTEGER NOT NULL DEFAULT 0,
            cost_usd    REAL,
            usage       TEXT
        )
        """,
    ),
    # v2: rollouts know which roadmap set (family source) they probed, so one student probed on
    # two teachers' roadmaps of the same problems keeps both (SQLite cannot alter a primary key).
    (
        f"""
        CREATE TABLE rollouts_v2 (
            student    TEXT NOT NULL,
            source     TEXT NOT NULL DEFAULT 'release',
{_JOB}            response   TEXT NOT NULL,
{_VERDICT}            PRIMARY KEY (student, source, pid, target, k, call_key)
        )
        """,
        """
        INSERT INTO rollouts_v2 (student, pid, target, k, call_key, run_id, response, label, reason,
                                 extracted, created_at)
        SELECT student, pid, target, k, call_key, run_id, response, label, reason, extracted, created_at
        FROM rollouts ORDER BY rowid
        """,
        "DROP TABLE rollouts",
        "ALTER TABLE rollouts_v2 RENAME TO rollouts",
        "CREATE INDEX IF NOT EXISTS rollouts_run ON rollouts(run_id)",
    ),
    # v3: a rollout says whether its verdict is one on the student (GradeStatus): an answer whose
    # grading failed is kept, marked 'ungraded', and graded again later from its stored response.
    (
        "ALTER TABLE rollouts ADD COLUMN status TEXT NOT NULL DEFAULT 'graded'",
    ),
    # v4: a probe job whose call failed for good (permanent 4xx, retries spent) is recorded as
    # failed with its reason, never as an answer; a later rollout of the same job supersedes it.
    (
        f"""
        CREATE TABLE IF NOT EXISTS failed_jobs (
            student    TEXT NOT NULL,
            source     TEXT NOT NULL,
{_JOB}            reason     TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (student, source, pid, target, k)
        )
        """,
        "CREATE INDEX IF NOT EXISTS failed_jobs_run ON failed_jobs(run_id)",
    ),
    # v5: a run records the process that runs it (host:pid:start), so a run whose process was
    # killed outright (SIGKILL, OOM, power) is shown as interrupted, not running forever.
    (
        "ALTER TABLE runs ADD COLUMN owner TEXT",
    ),
    # v6: an anchor screen's verdict on each family of a diagnostic set under construction (`ladder
    # screen`): kept or dropped with the reason, and the anchor's Stage 0 solve rate per milestone.
    (
        """
        CREATE TABLE IF NOT EXISTS screen_verdicts (
            set_name   TEXT NOT NULL,
            pid        TEXT NOT NULL,
            source     TEXT NOT NULL,
            anchor     TEXT NOT NULL,
            rule       TEXT NOT NULL,
            k          INTEGER NOT NULL,
            max_tokens INTEGER NOT NULL,
            verdict    TEXT NOT NULL,
            reason     TEXT NOT NULL,
            direct     INTEGER NOT NULL,
            stage0     TEXT NOT NULL,
            run_id     TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (set_name, pid)
        )
        """,
    ),
    # v7: a response is stored once, in its call: a rollout's response is NULL when it is its call's
    # (the readers join), and kept only where it differs (or its call is not in this store). Long
    # requests and responses written from now on are zstd-compressed BLOBs (store/sqlite.py).
    (
        f"""
        CREATE TABLE rollouts_v7 (
            student    TEXT NOT NULL,
            source     TEXT NOT NULL DEFAULT 'release',
{_JOB}            response   BLOB,
{_VERDICT}            status     TEXT NOT NULL DEFAULT 'graded',
            PRIMARY KEY (student, source, pid, target, k, call_key)
        )
        """,
        """
        INSERT INTO rollouts_v7 (student, source, pid, target, k, call_key, run_id, response, label, reason,
                                 extracted, created_at, status)
        SELECT r.student, r.source, r.pid, r.target, r.k, r.call_key, r.run_id,
               CASE WHEN r.response = (SELECT c.response FROM calls c WHERE c.key = r.call_key) THEN NULL
                    ELSE r.response END,
               r.label, r.reason, r.extracted, r.created_at, r.status
        FROM rollouts r ORDER BY r.rowid
        """,
        "DROP TABLE rollouts",
        "ALTER TABLE rollouts_v7 RENAME TO rollouts",
        "CREATE INDEX IF NOT EXISTS rollouts_run ON rollouts(run_id)",
    ),
    # v8: the batches submitted to a provider's batch API (`--batch`), written before their create
    # request (state creating, a provisional id intent-...) and under their id the moment the provider
    # returns it: a run killed while they are in flight reads them instead of submitting again.
    # custom_ids: a JSON list of the call keys the batch holds.
    (
        """
        CREATE TABLE IF NOT EXISTS batches (
            id         TEXT PRIMARY KEY,
            provider   TEXT NOT NULL,
            endpoint   TEXT,
            model      TEXT NOT NULL,
            state      TEXT NOT NULL,
            requests   INTEGER NOT NULL,
            succeeded  INTEGER NOT NULL DEFAULT 0,
            failed     INTEGER NOT NULL DEFAULT 0,
            custom_ids TEXT NOT NULL,
            run_id     TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """,
    ),
    # v9: `ladder compile --primitives-only`: each teacher attempt at a family's primitive (the family
    # of pid/source/granularity, asked of `teacher`), its validator errors; the result goes on the family.
    (
        """
        CREATE TABLE IF NOT EXISTS primitive_attempts (
            pid         TEXT NOT NULL,
            source      TEXT NOT NULL,
            granularity TEXT NOT NULL DEFAULT '',
            teacher     TEXT NOT NULL,
            attempt     INTEGER NOT NULL,
            primitive   TEXT,
            errors      TEXT NOT NULL,
            passed      INTEGER NOT NULL,
            created_at  TEXT NOT NULL,
            PRIMARY KEY (pid, source, granularity, teacher, attempt)
        )
        """,
    ),
    # v10: a code problem's accepted packet has a table of its own (it was found again by validating
    # the plan of every passing compile attempt). The packets of earlier stores are taken from the
    # last passing attempt whose plan is a packet; the attempts keep their plans (the teacher's
    # answers), the injected prompt version moves to its own column.
    (
        """
        CREATE TABLE IF NOT EXISTS packets (
            pid            TEXT NOT NULL,
            source         TEXT NOT NULL,
            attempt        INTEGER NOT NULL,
            packet         TEXT NOT NULL,
            prompt_version TEXT,
            created_at     TEXT NOT NULL,
            PRIMARY KEY (pid, source)
        )
        """,
        """
        INSERT OR REPLACE INTO packets (pid, source, attempt, packet, prompt_version, created_at)
        SELECT pid, source, attempt, json_remove(plan, '$.prompt_version'), json_extract(plan, '$.prompt_version'),
               created_at
        FROM compile_attempts
        WHERE passed = 1 AND json_valid(plan) AND json_type(plan, '$.plan') = 'text'
              AND json_type(plan, '$.helpers') = 'array' AND json_type(plan, '$.program') = 'text'
        ORDER BY pid, source, granularity, attempt
        """,
    ),
    # v11: a prompt's request is stored once for its K calls: ``requests`` holds each request body
    # (without its sampling index k, zstd-compressed when long) under the sha256 of its JSON, and a
    # call keeps the id of its body and its own k (calls.py).
    (
        """
        CREATE TABLE requests (
            id     INTEGER PRIMARY KEY,
            digest BLOB NOT NULL UNIQUE,
            body   BLOB NOT NULL
        )
        """,
        """
        INSERT OR IGNORE INTO requests (digest, body)
        SELECT ladder_request_digest(request), ladder_request_body(request) FROM calls ORDER BY rowid
        """,
        f"""
        CREATE TABLE calls_v9 (
            key           TEXT PRIMARY KEY,
            provider      TEXT NOT NULL,
            model         TEXT NOT NULL,
            request_id    INTEGER NOT NULL REFERENCES requests(id),
            k             INTEGER NOT NULL DEFAULT 0,
            response      BLOB,
{_USAGE}            created_at    TEXT NOT NULL
        )
        """,
        """
        INSERT INTO calls_v9 (key, provider, model, request_id, k, response, tokens_in, tokens_out, latency_s,
                              finish_reason, error, run_id, created_at)
        SELECT c.key, c.provider, c.model, q.id, ladder_request_k(c.request), c.response, c.tokens_in,
               c.tokens_out, c.latency_s, c.finish_reason, c.error, c.run_id, c.created_at
        FROM calls c JOIN requests q ON q.digest = ladder_request_digest(c.request) ORDER BY c.rowid
        """,
        "DROP TABLE calls",
        "ALTER TABLE calls_v9 RENAME TO calls",
        "CREATE INDEX IF NOT EXISTS calls_run ON calls(run_id)",
    ),
    # v12: a store that stays small. A call key (a sha256) is stored as its 32 bytes, not 64 hex
    # characters (rows.pack_key); the strings every rollout repeats (student, source, pid, target,
    # run id) are stored once in ``names`` and a rollout keeps their ids, so its row and its unique
    # key are a few bytes each; the response is the last column of calls and rollouts (reading the
    # others does not walk its overflow pages); families are packed like responses. The view
    # ``rollouts_named`` reads rollouts with their strings (and ``seq``, their insertion order).
    (
        "CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
        f"""
        CREATE TABLE calls_v12 (
            key           BLOB NOT NULL UNIQUE,
            provider      TEXT NOT NULL,
            model         TEXT NOT NULL,
            request_id    INTEGER NOT NULL REFERENCES requests(id),
            k             INTEGER NOT NULL DEFAULT 0,
{_USAGE}            created_at    TEXT NOT NULL,
            response      BLOB
        )
        """,
        """
        INSERT INTO calls_v12 (key, provider, model, request_id, k, tokens_in, tokens_out, latency_s, finish_reason,
                               error, run_id, created_at, response)
        SELECT ladder_pack_key(key), provider, model, request_id, k, tokens_in, tokens_out, latency_s, finish_reason,
               error, run_id, created_at, response
        FROM calls ORDER BY rowid
        """,
        "DROP TABLE calls",
        "ALTER TABLE calls_v12 RENAME TO calls",
        "CREATE INDEX calls_run ON calls(run_id)",
        """
        INSERT INTO names (name)
        SELECT student FROM rollouts UNION SELECT source FROM rollouts UNION SELECT pid FROM rollouts
        UNION SELECT target FROM rollouts UNION SELECT run_id FROM rollouts
        """,
        """
        CREATE TABLE rollouts_v12 (
            student_ref INTEGER NOT NULL REFERENCES names(id),
            source_ref  INTEGER NOT NULL REFERENCES names(id),
            pid_ref     INTEGER NOT NULL REFERENCES names(id),
            target_ref  INTEGER NOT NULL REFERENCES names(id),
            k           INTEGER NOT NULL,
            call_key    BLOB NOT NULL,
            run_ref     INTEGER NOT NULL REFERENCES names(id),
            label       TEXT NOT NULL,
            reason      TEXT NOT NULL,
            extracted   TEXT,
            status      TEXT NOT NULL DEFAULT 'graded',
            created_at  TEXT NOT NULL,
            response    BLOB,
            UNIQUE (student_ref, source_ref, pid_ref, target_ref, k, call_key)
        )
        """,
        """
        INSERT INTO rollouts_v12 (student_ref, source_ref, pid_ref, target_ref, k, call_key, run_ref, label, reason,
                                  extracted, status, created_at, response)
        SELECT (SELECT id FROM names WHERE name = r.student), (SELECT id FROM names WHERE name = r.source),
               (SELECT id FROM names WHERE name = r.pid), (SELECT id FROM names WHERE name = r.target), r.k,
               ladder_pack_key(r.call_key), (SELECT id FROM names WHERE name = r.run_id), r.label, r.reason,
               r.extracted, r.status, r.created_at, r.response
        FROM rollouts r ORDER BY r.rowid
        """,
        "DROP TABLE rollouts",
        "ALTER TABLE rollouts_v12 RENAME TO rollouts",
        "CREATE INDEX rollouts_run ON rollouts(run_ref)",
        """
        CREATE VIEW rollouts_named AS
        SELECT r.rowid AS seq, student.name AS student, source.name AS source, pid.name AS pid, target.name AS target,
               r.k, r.call_key, run.name AS run_id, r.label, r.reason, r.extracted, r.status, r.created_at, r.response
        FROM rollouts r JOIN names student ON student.id = r.student_ref JOIN names source ON source.id = r.source_ref
             JOIN names pid ON pid.id = r.pid_ref JOIN names target ON target.id = r.target_ref
             JOIN names run ON run.id = r.run_ref
        """,
        "UPDATE families SET family = ladder_pack(family), released = ladder_pack(released)",
    ),
)
