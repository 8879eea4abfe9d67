"""Migration steps v13 on (``schema.MIGRATIONS``): SQL only, each step a tuple of statements; they
call the SQL functions of ``schema.SQL_FUNCTIONS``. Never edit a released step: append a new one."""

# The model each run called, read once (v15 and v19 name a call by the runs of its time: reading
# every run's config again for each call made opening a store quadratic, as its runs grow with it)
RUN_MODELS = """
CREATE TEMP TABLE run_models AS
SELECT started_at, finished_at, ladder_run_model(kind, config) AS model FROM runs
WHERE ladder_run_model(kind, config) IS NOT NULL
"""

# v22: the call key of the one rollout a judge's row ``s`` can have judged ('' where its sample was made at
# several settings); a call key is stored as its 32 bytes (v12), given back as its hex digest
_THE_ROLLOUT = """COALESCE((
    SELECT CASE COUNT(*) WHEN 1 THEN MAX(CASE typeof(r.call_key) WHEN 'blob' THEN lower(hex(r.call_key))
                                        ELSE r.call_key END) END
    FROM rollouts r
    WHERE r.student_ref = (SELECT id FROM names WHERE name = s.student)
      AND r.source_ref = (SELECT id FROM names WHERE name = s.source)
      AND r.pid_ref = (SELECT id FROM names WHERE name = s.pid)
      AND r.target_ref = (SELECT id FROM names WHERE name = s.target) AND r.k = s.k), '')"""

# PRIM's judges' tables as v13 made them, their columns one text for v13 and for v22 (which makes them
# again with the rollout judged): each step's SQL stays the one released
_JUDGED = """
            student    TEXT NOT NULL,
            source     TEXT NOT NULL,
            pid        TEXT NOT NULL,
            target     TEXT NOT NULL,
            k          INTEGER NOT NULL,
            judge      TEXT NOT NULL,
"""  # the sample judged, and the judge
_SCORE_COLUMNS = _JUDGED + """            status     TEXT NOT NULL,
            validity   INTEGER,
            failure    TEXT,
            gate       REAL,
            mechanism  REAL,
            score      REAL,
            reason     TEXT NOT NULL,
            evidence   TEXT NOT NULL,
            call_keys  TEXT NOT NULL,
            run_id     TEXT NOT NULL,
            created_at TEXT NOT NULL,
"""
_VERDICT_COLUMNS = _JUDGED + """            verdict    TEXT NOT NULL,
            extracted  TEXT,
            reason     TEXT NOT NULL,
            call_keys  TEXT NOT NULL,
            run_id     TEXT NOT NULL,
            created_at TEXT NOT NULL,
"""

# v15 and v23: the student whose answer each call was (its rollouts', else its failed jobs'), by call key
_STUDENTS = (
        "CREATE TEMP TABLE rekey_students (call_key BLOB PRIMARY KEY, student TEXT NOT NULL)",
        """
        INSERT OR IGNORE INTO rekey_students (call_key, student)
        SELECT r.call_key, n.name FROM rollouts r JOIN names n ON n.id = r.student_ref ORDER BY r.rowid
        """,
        """
        INSERT OR IGNORE INTO rekey_students (call_key, student)
        SELECT ladder_pack_key(call_key), student FROM failed_jobs ORDER BY rowid
        """,
)
# v15 and v23: the one model the runs of a call's time called (of the call's provider), else none
_RUN_MODEL = """(SELECT CASE COUNT(DISTINCT u.model) WHEN 1 THEN MAX(u.model) END
             FROM run_models u
             WHERE u.started_at <= c.created_at AND (u.finished_at IS NULL OR c.created_at <= u.finished_at)
                   AND substr(u.model, 1, length(c.provider) + 1) = c.provider || '/')"""

# v21 and v23: the calls to key again (``old`` key, the call's rowid, its ``new`` key), applied: a success
# first where two become one key, the other keeps its key; then what names a call by its key follows it
# (its model column says the identity)
_REKEY_TABLE = (
        "CREATE TEMP TABLE rekey (old BLOB PRIMARY KEY, call_id INTEGER NOT NULL, new BLOB NOT NULL)",
        "CREATE INDEX temp.rekey_call ON rekey(call_id)",
)
_REKEY_CALLS = (
        """
        UPDATE OR IGNORE calls SET key = (SELECT new FROM rekey WHERE call_id = calls.rowid)
        WHERE response IS NOT NULL AND rowid IN (SELECT call_id FROM rekey)
        """,
        """
        UPDATE OR IGNORE calls SET key = (SELECT new FROM rekey WHERE call_id = calls.rowid)
        WHERE response IS NULL AND rowid IN (SELECT call_id FROM rekey)
        """,
        "DELETE FROM rekey WHERE NOT EXISTS (SELECT 1 FROM calls WHERE rowid = rekey.call_id AND key = rekey.new)",
)
_REKEY_FOLLOW = (
        "UPDATE calls SET model = ladder_served_identity(model) WHERE rowid IN (SELECT call_id FROM rekey)",
        """
        UPDATE OR IGNORE rollouts SET call_key = (SELECT new FROM rekey WHERE old = rollouts.call_key)
        WHERE call_key IN (SELECT old FROM rekey)
        """,
        """
        UPDATE OR IGNORE run_reuse SET call_key = (SELECT new FROM rekey WHERE old = run_reuse.call_key)
        WHERE call_key IN (SELECT old FROM rekey)
        """,
        """
        UPDATE failed_jobs SET call_key = lower(hex((SELECT new FROM rekey WHERE old = ladder_pack_key(call_key))))
        WHERE ladder_pack_key(call_key) IN (SELECT old FROM rekey)
        """,
)

STEPS: tuple[tuple[str, ...], ...] = (
    # v13: PRIM's diagnosis (docs/prim.md). ``primitives``: a problem's primitives in PRIM's three
    # fields, one per (provenance, author) (gold: author ''); the one-sentence primitives of the
    # primitive rung are copied in as core_concept, provenance teacher, their own kept as ``origin``
    # (the families keep theirs). ``prim_solutions``: a problem's reference solution (Digestion, the
    # judge). ``prim_plans``: a teacher's plan of a problem (3-6 steps, no answer; Execution under
    # the plan). ``prim_answer_verdicts``: an LLM answer judge's verdict on a Generation or Execution
    # answer (`--answer-judge`), apart from the grader's. ``prim_scores``: the judge's V, gate and mechanism on each predicted primitive (a
    # Discovery or Digestion rollout), or why its score is missing.
    (
        """
        CREATE TABLE primitives (
            pid        TEXT NOT NULL,
            provenance TEXT NOT NULL,
            author     TEXT NOT NULL DEFAULT '',
            family     TEXT,
            primitive  TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (pid, provenance, author)
        )
        """,
        """
        INSERT OR IGNORE INTO primitives (pid, provenance, author, family, primitive, created_at)
        SELECT pid, 'teacher', COALESCE(json_extract(ladder_text(family), '$.primitive.teacher'), ''), NULL,
               json_object('pid', pid, 'essential_property', '', 'solution_principle', '',
                           'core_concept', json_extract(ladder_text(family), '$.primitive.text'),
                           'primary_type', NULL, 'secondary_types', json_array(), 'family', NULL,
                           'provenance', 'teacher',
                           'author', COALESCE(json_extract(ladder_text(family), '$.primitive.teacher'), ''),
                           'origin', json_extract(ladder_text(family), '$.primitive.provenance')),
               created_at
        FROM families WHERE json_type(ladder_text(family), '$.primitive') = 'object' ORDER BY rowid
        """,
        """
        CREATE TABLE prim_solutions (
            pid        TEXT PRIMARY KEY,
            solution   TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """,
        """
        CREATE TABLE prim_plans (
            pid        TEXT NOT NULL,
            author     TEXT NOT NULL,
            steps      TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (pid, author)
        )
        """,
        f"""
        CREATE TABLE prim_answer_verdicts ({_VERDICT_COLUMNS}            PRIMARY KEY (student, source, pid, target, k, judge)
        )
        """,
        f"""
        CREATE TABLE prim_scores ({_SCORE_COLUMNS}            PRIMARY KEY (student, source, pid, target, k, judge)
        )
        """,
    ),
    # v14: imported panels (`ladder panels import`): a published model's counts, n_correct of k per
    # family and condition or milestone ("m<i>"), with no rollout behind them; run_id names the import.
    (
        """
        CREATE TABLE panel_cells (
            student    TEXT NOT NULL,
            source     TEXT NOT NULL,
            pid        TEXT NOT NULL,
            target     TEXT NOT NULL,
            n_correct  INTEGER NOT NULL,
            k          INTEGER NOT NULL,
            run_id     TEXT NOT NULL,
            PRIMARY KEY (student, source, pid, target)
        )
        """,
    ),
    # v15: a call's key names the model, not the address it is asked at (ChatRequest.key): a call to a
    # server other than the provider's own was keyed by its URL, and is keyed again by the user's name
    # of its model (the student its rollouts or failed jobs name, else the one model the runs of its
    # time called, else provider/model). Where two stored calls are one call asked at two addresses,
    # the first success (else the first) takes the new key; the other keeps its old key and its
    # rollouts theirs. Rollouts and failed jobs follow their call.
    (
        "CREATE TEMP TABLE rekey (old BLOB PRIMARY KEY, call_id INTEGER NOT NULL, new BLOB)",
        # the calls' updates look their row up by call_id: without this index each scans the table
        # (quadratic: a v12 store of 20,000 calls took a minute to open)
        "CREATE INDEX temp.rekey_call ON rekey(call_id)",
        RUN_MODELS,
        *_STUDENTS,
        f"""
        INSERT INTO rekey (old, call_id, new)
        SELECT c.key, c.rowid, ladder_rekeyed(q.body, c.k, COALESCE(
            (SELECT student FROM rekey_students WHERE call_key = c.key),
            {_RUN_MODEL},
            c.provider || '/' || c.model))
        FROM calls c JOIN requests q ON q.id = c.request_id
        WHERE ladder_asked_at(q.body) IS NOT NULL
        """,
        """
        UPDATE OR IGNORE calls SET key = (SELECT new FROM rekey WHERE call_id = calls.rowid)
        WHERE response IS NOT NULL AND rowid IN (SELECT call_id FROM rekey)
        """,
        """
        UPDATE OR IGNORE calls SET key = (SELECT new FROM rekey WHERE call_id = calls.rowid)
        WHERE response IS NULL AND rowid IN (SELECT call_id FROM rekey)
        """,
        "DELETE FROM rekey WHERE NOT EXISTS (SELECT 1 FROM calls WHERE rowid = rekey.call_id AND key = rekey.new)",
        """
        UPDATE rollouts SET call_key = (SELECT new FROM rekey WHERE old = rollouts.call_key)
        WHERE call_key IN (SELECT old FROM rekey)
        """,
        """
        UPDATE failed_jobs SET call_key = lower(hex((SELECT new FROM rekey WHERE old = ladder_pack_key(call_key))))
        WHERE ladder_pack_key(call_key) IN (SELECT old FROM rekey)
        """,
        "DROP TABLE rekey",
        "DROP TABLE rekey_students",
        "DROP TABLE run_models",
    ),
    # v16: the calls being asked, each claimed by the store that asks it (claims.py): two processes on
    # one store pay each call once. owner: process_owner/the store's id; expires: its lease (epoch s).
    (
        "CREATE TABLE claims (key BLOB PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL) WITHOUT ROWID",
    ),
    # v17: the automated rubric review (`ladder audit review`, reviews.py), one label per
    # student and family of a roadmap set; label NULL: unreviewed (no readable reply after its re-ask).
    (
        """
        CREATE TABLE reviews (
            student    TEXT NOT NULL,
            source     TEXT NOT NULL,
            pid        TEXT NOT NULL,
            reviewer   TEXT NOT NULL,
            prompt     TEXT NOT NULL,
            label      TEXT,
            reason     TEXT NOT NULL,
            run_id     TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (student, source, pid)
        )
        """,
    ),
    # v18: `ladder compile --integrate-only`: each teacher attempt at a family's INTEGRATE
    # step (its plan: description, answer schema, gold), its validator errors; the step goes on the family.
    (
        """
        CREATE TABLE integrate_attempts (
            pid         TEXT NOT NULL,
            source      TEXT NOT NULL,
            granularity TEXT NOT NULL DEFAULT '',
            teacher     TEXT NOT NULL,
            attempt     INTEGER NOT NULL,
            plan        TEXT,
            errors      TEXT NOT NULL,
            passed      INTEGER NOT NULL,
            created_at  TEXT NOT NULL,
            PRIMARY KEY (pid, source, granularity, teacher, attempt)
        )
        """,
    ),
    # v19: a structured call's key is its logical request (ChatRequest.key: the
    # caller's messages, the schema, the mode's name), no longer the body its mode built: each one is keyed
    # again from its stored body (``structured_rekeyed``), named as v15 named it where its body has no
    # name (a call at a server stored before v15: the one model the runs of its time called, else
    # provider/model). Where two become one key the first success (else the first) takes it. No other
    # table holds a structured call's key.
    (
        "CREATE TEMP TABLE rekey (call_id INTEGER PRIMARY KEY, new BLOB NOT NULL)",
        RUN_MODELS,
        """
        INSERT INTO rekey (call_id, new)
        SELECT c.rowid, ladder_structured_rekeyed(q.body, c.k, CASE WHEN ladder_asked_at(q.body) IS NOT NULL THEN
            COALESCE((SELECT CASE COUNT(DISTINCT u.model) WHEN 1 THEN MAX(u.model) END
                      FROM run_models u
                      WHERE u.started_at <= c.created_at AND (u.finished_at IS NULL OR c.created_at <= u.finished_at)
                            AND substr(u.model, 1, length(c.provider) + 1) = c.provider || '/'),
                     c.provider || '/' || c.model) END)
        FROM calls c JOIN requests q ON q.id = c.request_id
        WHERE ladder_structured_rekeyed(q.body, c.k, NULL) IS NOT NULL
        """,
        """
        UPDATE OR IGNORE calls SET key = (SELECT new FROM rekey WHERE call_id = calls.rowid)
        WHERE response IS NOT NULL AND rowid IN (SELECT call_id FROM rekey)
        """,
        """
        UPDATE OR IGNORE calls SET key = (SELECT new FROM rekey WHERE call_id = calls.rowid)
        WHERE response IS NULL AND rowid IN (SELECT call_id FROM rekey)
        """,
        "DROP TABLE rekey",
        "DROP TABLE run_models",
    ),
    # v20: a cached rerun no longer takes a rollout over: the rollout keeps the run that paid for its
    # call, and ``run_reuse`` records each later run that reused it (by the rollout's unique key).
    (
        """
        CREATE TABLE run_reuse (
            run_ref INTEGER NOT NULL REFERENCES names(id),
            -- the rollout reused, by its unique key (its names' ids, k, call key)
            student_ref INTEGER NOT NULL, source_ref INTEGER NOT NULL, pid_ref INTEGER NOT NULL,
            target_ref INTEGER NOT NULL, k INTEGER NOT NULL, call_key BLOB NOT NULL,
            PRIMARY KEY (run_ref, student_ref, source_ref, pid_ref, target_ref, k, call_key)
        ) WITHOUT ROWID
        """,
    ),
    # v21: a call names a served model by what it is (`schemas.calls.served_identity`: a weights
    # file by its name), not by the path a server listed it by as typed: a call stored under such a path
    # is keyed again by the identity (``identity_rekeyed``), where its stored body gives its key. Where two
    # become one key the first success (else the first) takes it; the other keeps its key, and its
    # rollouts theirs. Rollouts, failed jobs and reuses follow their call; the call's model column says the
    # identity, its body what was sent, and ``call_identities`` how many calls of each spelling now
    # answer as which identity (a run's message says so).
    (
        """
        CREATE TABLE call_identities (
            provider TEXT NOT NULL,
            spelled  TEXT NOT NULL,
            identity TEXT NOT NULL,
            calls    INTEGER NOT NULL,
            PRIMARY KEY (provider, spelled)
        )
        """,
        *_REKEY_TABLE,
        """
        INSERT INTO rekey (old, call_id, new)
        SELECT c.key, c.rowid, ladder_identity_rekeyed(q.body, c.k, c.key)
        FROM calls c JOIN requests q ON q.id = c.request_id
        WHERE (c.model LIKE '%.gguf' OR substr(c.model, 1, 1) IN ('/', '~', '.'))
              AND ladder_identity_rekeyed(q.body, c.k, c.key) IS NOT NULL
        """,
        *_REKEY_CALLS,
        """
        INSERT INTO call_identities (provider, spelled, identity, calls)
        SELECT provider, model, ladder_served_identity(model), COUNT(*) FROM calls
        WHERE rowid IN (SELECT call_id FROM rekey) GROUP BY provider, model
        """,
        *_REKEY_FOLLOW,
        "DROP TABLE rekey",
    ),
    # v22: a judge's score of a primitive and an answer judge's verdict name the rollout they judged (its call
    # key, ``rollout_call``), so that two runs of one sample at two settings (two --max-tokens) never share a
    # row. A row from before takes the call key of the one rollout of its student, set, problem, target and
    # sample; where several were (two settings: which one it judged is unknown) it keeps '' and no report
    # reads it (a rerun of the judge scores each rollout again).
    (
        f"""
        CREATE TABLE prim_scores_v22 ({_SCORE_COLUMNS}            rollout_call TEXT NOT NULL,
            PRIMARY KEY (student, source, pid, target, k, judge, rollout_call)
        )
        """,
        f"""
        INSERT INTO prim_scores_v22 (student, source, pid, target, k, judge, status, validity, failure, gate,
                                     mechanism, score, reason, evidence, call_keys, run_id, created_at, rollout_call)
        SELECT s.student, s.source, s.pid, s.target, s.k, s.judge, s.status, s.validity, s.failure, s.gate,
               s.mechanism, s.score, s.reason, s.evidence, s.call_keys, s.run_id, s.created_at, {_THE_ROLLOUT}
        FROM prim_scores s ORDER BY s.rowid
        """,
        "DROP TABLE prim_scores",
        "ALTER TABLE prim_scores_v22 RENAME TO prim_scores",
        f"""
        CREATE TABLE prim_answer_verdicts_v22 ({_VERDICT_COLUMNS}            rollout_call TEXT NOT NULL,
            PRIMARY KEY (student, source, pid, target, k, judge, rollout_call)
        )
        """,
        f"""
        INSERT INTO prim_answer_verdicts_v22 (student, source, pid, target, k, judge, verdict, extracted, reason,
                                              call_keys, run_id, created_at, rollout_call)
        SELECT s.student, s.source, s.pid, s.target, s.k, s.judge, s.verdict, s.extracted, s.reason, s.call_keys,
               s.run_id, s.created_at, {_THE_ROLLOUT}
        FROM prim_answer_verdicts s ORDER BY s.rowid
        """,
        "DROP TABLE prim_answer_verdicts",
        "ALTER TABLE prim_answer_verdicts_v22 RENAME TO prim_answer_verdicts",
    ),
    # v23: the calls v21 left keyed by a path as typed because their body is from before v13 (the server's URL
    # in it, and no name: v15 keyed them by the user's name of the model, which v21 did not try): keyed again
    # by the identity as v21 keys the others, each trying the names v15 chose from (the student of its
    # answers, the one model the runs of its time called, provider/model), the one that gives its key. A
    # judge's row naming a rollout's call (v22) follows it too.
    (
        *_REKEY_TABLE,
        RUN_MODELS,
        *_STUDENTS,
        f"""
        INSERT INTO rekey (old, call_id, new)
        SELECT * FROM (
            SELECT c.key AS old, c.rowid AS call_id, ladder_identity_rekeyed_as(q.body, c.k, c.key, json_array(
                (SELECT student FROM rekey_students WHERE call_key = c.key),
                {_RUN_MODEL},
                c.provider || '/' || c.model)) AS new
            FROM calls c JOIN requests q ON q.id = c.request_id
            WHERE (c.model LIKE '%.gguf' OR substr(c.model, 1, 1) IN ('/', '~', '.'))
                  AND ladder_asked_at(q.body) IS NOT NULL)
        WHERE new IS NOT NULL
        """,
        *_REKEY_CALLS,
        """
        INSERT INTO call_identities (provider, spelled, identity, calls)
        SELECT provider, model, ladder_served_identity(model), COUNT(*) FROM calls
        WHERE rowid IN (SELECT call_id FROM rekey) GROUP BY provider, model
        ON CONFLICT (provider, spelled) DO UPDATE SET calls = calls + excluded.calls
        """,
        *_REKEY_FOLLOW,
        *(f"""
        UPDATE OR IGNORE {table} SET rollout_call = lower(hex((SELECT new FROM rekey WHERE old = ladder_pack_key(rollout_call))))
        WHERE ladder_pack_key(rollout_call) IN (SELECT old FROM rekey)
        """ for table in ("prim_scores", "prim_answer_verdicts")),
        "DROP TABLE rekey",
        "DROP TABLE rekey_students",
        "DROP TABLE run_models",
    ),
)
