/**
 * Schema history of the run store. Migrations are append-only: a released database may be at any earlier
 * version, so an applied migration is never edited — a change to the schema is a new entry at the end.
 */
import type Database from 'better-sqlite3'
import { UserInputError } from '../engine/errors'

export interface Migration {
  version: number
  name: string
  sql: string
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'runs, prompt results and steps',
    sql: `
      CREATE TABLE runs (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        created_at  TEXT NOT NULL,
        finished_at TEXT NULL,
        suite       TEXT NULL,
        methods     TEXT NOT NULL,  -- JSON array of method ids
        config      TEXT NOT NULL,  -- JSON RunConfig
        status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'cancelled', 'interrupted', 'failed')),
        error       TEXT NULL
      );

      CREATE TABLE prompt_results (
        id            INTEGER PRIMARY KEY,
        run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        method        TEXT NOT NULL,
        prompt_index  INTEGER NOT NULL,
        prompt_id     TEXT NULL,
        category      TEXT NULL,
        prompt_text   TEXT NOT NULL,
        seed_stream   INTEGER NOT NULL,
        status        TEXT NOT NULL CHECK (status IN ('running', 'done', 'cancelled', 'failed')),
        output_text   TEXT NOT NULL DEFAULT '',
        output_tokens TEXT NOT NULL DEFAULT '[]',  -- JSON int array
        provenance    TEXT NOT NULL DEFAULT '',    -- one PROVENANCE_CODES char per output token
        output_count  INTEGER NOT NULL DEFAULT 0,
        stop_reason   TEXT NULL,
        wall_ms       REAL NULL,
        started_at    TEXT NOT NULL,
        finished_at   TEXT NULL
      );

      CREATE TABLE steps (
        id                    INTEGER PRIMARY KEY,
        result_id             INTEGER NOT NULL REFERENCES prompt_results(id) ON DELETE CASCADE,
        step_index            INTEGER NOT NULL,
        stage                 TEXT NOT NULL,
        proposed              INTEGER NOT NULL,
        accepted              INTEGER NOT NULL,
        resampled             INTEGER NOT NULL,  -- 0 | 1
        bonus                 INTEGER NOT NULL,  -- 0 | 1
        emitted               INTEGER NOT NULL,
        draft_tokens          INTEGER NOT NULL,
        accepted_draft_tokens INTEGER NOT NULL,
        draft_entropies       TEXT NOT NULL,     -- JSON number array
        threshold             REAL NULL,
        decision              TEXT NULL,         -- JSON object
        target_calls          INTEGER NOT NULL,
        draft_calls           INTEGER NOT NULL,
        draft_ms              REAL NOT NULL,
        verify_ms             REAL NOT NULL,
        total_ms              REAL NOT NULL
      );

      CREATE INDEX prompt_results_run_id ON prompt_results(run_id);
      CREATE INDEX steps_result_id ON steps(result_id);
    `
  },
  {
    version: 2,
    name: 'run owner process',
    // The app and the CLI may share one database: a run is only "interrupted" when the process that owns it is
    // gone, not merely because another process opened the file while it was running.
    sql: `
      ALTER TABLE runs ADD COLUMN owner_pid INTEGER NULL;
      ALTER TABLE runs ADD COLUMN owner_host TEXT NULL;
    `
  },
  {
    version: 3,
    name: 'per-level counters of three-model hierarchies',
    // StepRecord.levels (JSON LevelCounters: drafted/accepted/calls per level, α/β overlap sums) for pre-verify,
    // pre-self-verify, hsddw and hier-chen; NULL for two-model methods and rows written before this version.
    sql: `
      ALTER TABLE steps ADD COLUMN levels TEXT NULL;
    `
  },
  {
    version: 4,
    name: 'draft-model selection decisions',
    // 004 §5: per prompt, the features, predictions and the draft chosen (phase 'choice'), and the warm-up decodes
    // that fitted the predictor (phase 'warmup', one row per draft and warm-up prompt).
    sql: `
      CREATE TABLE draft_choices (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        prompt_index  INTEGER NOT NULL,
        phase         TEXT NOT NULL CHECK (phase IN ('warmup', 'choice')),
        draft_path    TEXT NOT NULL,
        detail        TEXT NOT NULL    -- JSON: features, observed or predicted acceptance, throughput, γ
      );
      CREATE INDEX draft_choices_run_id ON draft_choices(run_id);
    `
  },
  {
    version: 5,
    name: 'conversations, messages and the model library',
    // The app: chat conversations reopened across sessions — each assistant message keeps its text in
    // runs of one provenance (segments), the generation settings and the live statistics at its end — and the
    // GGUF files the user added or downloaded (metadata is re-read from the file, so only the path is kept).
    sql: `
      CREATE TABLE conversations (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL,
        title       TEXT NOT NULL
      );
      CREATE TABLE messages (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        text            TEXT NOT NULL,
        segments        TEXT NULL,   -- JSON [{text, provenance}] (assistant)
        settings        TEXT NULL,   -- JSON GenerationSettings incl. the seed used (assistant)
        stats           TEXT NULL,   -- JSON LiveStats at the end of the generation (assistant)
        stop_reason     TEXT NULL,
        format          TEXT NULL CHECK (format IS NULL OR format IN ('chat', 'completion')),
        models          TEXT NULL,   -- JSON {target, mid, draft} paths (assistant)
        created_at      TEXT NOT NULL
      );
      CREATE INDEX messages_conversation_id ON messages(conversation_id);
      CREATE TABLE models (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        path        TEXT NOT NULL UNIQUE,
        source      TEXT NOT NULL CHECK (source IN ('file', 'download')),
        uri         TEXT NULL,
        added_at    TEXT NOT NULL
      );
    `
  },
  {
    version: 6,
    name: 'suite runs, their cells and output scores',
    // A suite run is the parent of its cells — one ordinary run per grid point, linked by suite_run_id and
    // a cell key stable within the suite ('table2/mt-bench/trio'); a cell is finished when its run is 'done', so
    // a resumed suite skips it. `plan` keeps every cell's full RunConfig as planned, so a resume (or a report
    // years later) never depends on how today's code would expand the grid. result_scores: per prompt result,
    // the output's negative log-likelihood under the raw target (temperature 1), which perplexities fold over.
    sql: `
      CREATE TABLE suite_runs (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        suite       TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        finished_at TEXT NULL,
        quick       INTEGER NOT NULL,  -- 0 | 1
        options     TEXT NOT NULL,     -- JSON SuiteRunOptions (models, seed, overrides)
        plan        TEXT NOT NULL,     -- JSON PlannedCell[]
        status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'cancelled', 'interrupted', 'failed')),
        error       TEXT NULL,
        owner_pid   INTEGER NULL,
        owner_host  TEXT NULL
      );
      ALTER TABLE runs ADD COLUMN suite_run_id INTEGER NULL REFERENCES suite_runs(id) ON DELETE SET NULL;
      ALTER TABLE runs ADD COLUMN cell_key TEXT NULL;
      CREATE INDEX runs_suite_run_id ON runs(suite_run_id);
      CREATE TABLE result_scores (
        result_id   INTEGER PRIMARY KEY REFERENCES prompt_results(id) ON DELETE CASCADE,
        scorer      TEXT NOT NULL,     -- path of the model that scored the output
        nll         REAL NOT NULL,     -- −Σ log p(output token | prefix), nats
        tokens      INTEGER NOT NULL   -- output tokens scored
      );
    `
  },
  {
    version: 7,
    name: 'model library: load attempts and load failures',
    // A model whose loading killed the engine process (a llama.cpp abort) must not be loaded again
    // without the user asking. `loading_since` is set before llama.cpp sees the file and cleared after; a host that
    // starts and finds it set knows the previous process died loading that file, and records why in `load_error`.
    sql: `
      ALTER TABLE models ADD COLUMN loading_since TEXT NULL;
      ALTER TABLE models ADD COLUMN loading_pid INTEGER NULL;
      ALTER TABLE models ADD COLUMN loading_host TEXT NULL;
      ALTER TABLE models ADD COLUMN load_error TEXT NULL;
    `
  },
  {
    version: 8,
    name: 'run names and notes',
    // A researcher names a run ("svip h sweep, quiet machine") and keeps notes on it; both are optional.
    sql: `
      ALTER TABLE runs ADD COLUMN name TEXT NULL;
      ALTER TABLE runs ADD COLUMN notes TEXT NULL;
    `
  },
  {
    version: 9,
    name: 'repeats and machine load',
    // Every (prompt, method) cell runs `repeats` times, interleaved; each repeat's wall time is kept
    // (repeat 0 is the decode whose output and steps prompt_results holds). run_order is the position in the
    // schedule, so the stored order shows the interleaving. runs.machine: load average and CPU governor before and
    // after the run (JSON), to flag runs measured on a busy machine. messages.prompt_tokens: the exact prompt a reply
    // was generated from, so its speedup over ar can be measured later on the same tokens (messages.baseline, JSON).
    sql: `
      CREATE TABLE result_repeats (
        result_id    INTEGER NOT NULL REFERENCES prompt_results(id) ON DELETE CASCADE,
        repeat       INTEGER NOT NULL,
        run_order    INTEGER NOT NULL,
        wall_ms      REAL NOT NULL,
        output_count INTEGER NOT NULL,
        same_output  INTEGER NOT NULL,
        PRIMARY KEY (result_id, repeat)
      );
      ALTER TABLE runs ADD COLUMN machine TEXT NULL;
      ALTER TABLE messages ADD COLUMN prompt_tokens TEXT NULL;
      ALTER TABLE messages ADD COLUMN baseline TEXT NULL;
    `
  },
  {
    version: 10,
    name: 'run identity and provenance',
    // Runs move between databases (`speclab runs export` / `import`, run-transfer.ts): `uid` is a run's identity
    // everywhere, so importing the same run twice finds it (new rows get a random UUID; rows from before this version
    // one derived from what never changes about them, so every open of an older file derives the same). origin_*:
    // where an imported run was first recorded (machine, database file, id there); imported_at: when it arrived.
    // Suite runs move with their cells and carry the same fields.
    sql: `
      ALTER TABLE runs ADD COLUMN uid TEXT NULL;
      ALTER TABLE runs ADD COLUMN origin_host TEXT NULL;
      ALTER TABLE runs ADD COLUMN origin_db TEXT NULL;
      ALTER TABLE runs ADD COLUMN origin_id INTEGER NULL;
      ALTER TABLE runs ADD COLUMN imported_at TEXT NULL;
      UPDATE runs SET uid = 'run:' || coalesce(owner_host, '') || ':' || coalesce(owner_pid, '') || ':' || created_at || ':' || id;
      CREATE UNIQUE INDEX runs_uid ON runs(uid);
      ALTER TABLE suite_runs ADD COLUMN uid TEXT NULL;
      ALTER TABLE suite_runs ADD COLUMN origin_host TEXT NULL;
      ALTER TABLE suite_runs ADD COLUMN origin_db TEXT NULL;
      ALTER TABLE suite_runs ADD COLUMN origin_id INTEGER NULL;
      ALTER TABLE suite_runs ADD COLUMN imported_at TEXT NULL;
      UPDATE suite_runs SET uid = 'suite:' || coalesce(owner_host, '') || ':' || coalesce(owner_pid, '') || ':' || created_at || ':' || id;
      CREATE UNIQUE INDEX suite_runs_uid ON suite_runs(uid);
    `
  },
  {
    version: 11,
    name: 'chat reply alternatives',
    // Regenerate keeps the earlier replies: every reply names the user message it answers (reply_to; NULL in older
    // rows, where a reply answers the user message before it), and the alternatives not shown are hidden. The
    // conversation, its export and the context of the next turn are the messages not hidden.
    sql: `
      ALTER TABLE messages ADD COLUMN reply_to INTEGER NULL;
      ALTER TABLE messages ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0 CHECK (hidden IN (0, 1));
      CREATE INDEX messages_reply_to ON messages(reply_to);
    `
  }
]

/** The schema version this build writes: the last migration's. */
export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version

/**
 * `PRAGMA application_id` of every SpecLab database: 0x53704C62, "SpLb" in ASCII. With `PRAGMA user_version` (the
 * schema version, mirroring schema_migrations) it tells SpecLab's files from other applications' SQLite files
 * without reading their tables (database-file.ts). Files of older builds lack it and are stamped when next opened
 * for writing.
 */
export const SPECLAB_APPLICATION_ID = 0x53704c62

/**
 * Applies every pending migration in one transaction that also stamps the file (application_id, and user_version =
 * the latest version), and returns how many it applied. A database already at the latest
 * version but not stamped (made by an older build) is stamped; when that write fails (a full disk) it is left for
 * the next open, since nothing depends on it.
 */
export function migrate(db: Database.Database): number {
  // The app and the CLI may open one new file at the same moment: the version is read and the migrations applied
  // under one write lock, so the second process finds the first one's schema instead of applying it again.
  const applied = db.transaction(() => applyPending(db)).immediate()
  if (applied === 0 && !isStamped(db)) {
    try {
      stamp(db, LATEST_VERSION)
    } catch {
      // read-only or full: the stamp is written by a later open
    }
  }
  return applied
}

function applyPending(db: Database.Database): number {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
  )`)
  const current = schemaVersion(db)
  // An older build must not write into a schema it does not know; refusing is safer than guessing.
  if (current > LATEST_VERSION) throw newerSchemaError(current)
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
  const pending = MIGRATIONS.filter((m) => m.version > current)
  for (const migration of pending) {
    db.exec(migration.sql)
    record.run(migration.version, migration.name, new Date().toISOString())
    stamp(db, migration.version)
  }
  return pending.length
}

/** The schema version of a SpecLab database: the newer of user_version and the last recorded migration. */
export function schemaVersion(db: Database.Database): number {
  const userVersion = db.pragma('user_version', { simple: true }) as number
  const hasTable = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).get()
  if (!hasTable) return userVersion
  const row = db.prepare('SELECT MAX(version) AS version FROM schema_migrations').get() as { version: number | null }
  return Math.max(userVersion, row.version ?? 0)
}

export function newerSchemaError(version: number): UserInputError {
  return new UserInputError(
    `database schema version ${version} is newer than this SpecLab supports (${LATEST_VERSION}); update SpecLab to open it`
  )
}

function isStamped(db: Database.Database): boolean {
  return (
    db.pragma('application_id', { simple: true }) === SPECLAB_APPLICATION_ID &&
    db.pragma('user_version', { simple: true }) === LATEST_VERSION
  )
}

function stamp(db: Database.Database, version: number): void {
  db.pragma(`application_id = ${SPECLAB_APPLICATION_ID}`)
  db.pragma(`user_version = ${version}`)
}
