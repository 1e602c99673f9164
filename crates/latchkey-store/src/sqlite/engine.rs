//! The SQLite engine under [`SqliteStore`](super::SqliteStore): one writer thread with group commit, and a
//! pool of read connections.
//!
//! **Writes** go to one dedicated thread through a channel. It takes every job waiting, runs them in one
//! `BEGIN IMMEDIATE` transaction (each job inside its own savepoint, so that a failing job leaves the others
//! intact) and commits once. A job sees the effects of the jobs before it in its batch (one connection, one
//! transaction), so "redeem a code once" and "record a value once" hold across a batch as they do across
//! batches.
//!
//! **Durability** is pipelined, as in PostgreSQL's group commit. The writer commits with `synchronous=NORMAL`
//! (the WAL frames are written to the OS, not yet to the disk) and hands a batch holding a durable job to the
//! syncer thread, which fdatasyncs the WAL file and only then answers the batch's jobs. While one fdatasync
//! runs, the writer already commits the next batches, and the next fdatasync covers all of them: the WAL is
//! written in order, so a sync makes every earlier commit durable too. A caller of a durable write is still
//! answered only once its write is on disk; what changes is that the writer never sits idle waiting for the
//! disk. SQLite itself still syncs the WAL before each checkpoint and the database file after it (what
//! `synchronous=NORMAL` promises), so a checkpoint never loses a commit the syncer has not reached yet.
//! Other connections can read a commit up to one fdatasync before it is durable; no response that hands out
//! a token or confirms a change is sent before then.
//!
//! **Scheduling.** The writer, the syncer and the checkpointer run under Linux's `SCHED_BATCH` policy (same
//! share of the CPU, same niceness): a job's arrival wakes the writer without preempting the thread that
//! handles requests. When requests and the writer share a busy core, that thread goes on parsing requests and
//! queueing their writes until it has nothing left to do, and the writer then commits all of them in one
//! transaction: the group commit forms on one core as it does on many, without a timer. Under the default
//! policy the writer preempted it at the first job and committed batches of one (DPoP refreshes, each recording
//! its proof: 2,800 → 3,400 per second on one core).
//! Left at that, the group forms too well: every request in flight joins one batch, and while its fdatasync
//! runs no request is left to handle, so the core idles (20% of the time in code exchanges on one core). So
//! every [`HAND_OVER_AT`] jobs waiting, the thread that queued the last one yields its core: the writer commits
//! what is there, its fdatasync starts, and the requests still coming are handled while it runs. The requests
//! in flight then go round in two groups whose disk waits overlap the other group's handling (code exchanges on
//! one core: 80% → 89% busy, 13,700–14,600 → 15,500–16,200 per second; revocations +3 to +10%).
//!
//! **Reads** run on the calling thread, on a connection taken from a small pool (opened on demand, at most
//! [`MAX_IDLE_READERS`] kept). They are index lookups of a few microseconds with cached prepared statements:
//! sending them to another thread would cost two thread switches, more than the query itself. WAL readers never
//! wait for the writer, and each statement sees every commit that was acknowledged before it started.

use crate::db::{Durability, Outcome};
use crate::{StoreError, StoreResult};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Read connections kept open between reads.
const MAX_IDLE_READERS: usize = 8;
/// The most jobs one transaction takes.
const MAX_BATCH: usize = 256;
/// The WAL's length, in frames (pages), past which the writer finishes a checkpoint itself so that the WAL
/// starts again from its beginning (64 MiB with 4 KiB pages). See [`write_loop`].
/// Tests use a small WAL, to see it start again after a few writes.
pub(super) const WAL_RESTART_FRAMES: i64 = if cfg!(test) { 256 } else { 16_384 };
/// The size the WAL file is cut back to when it starts again.
pub(super) const WAL_SIZE_LIMIT: i64 = if cfg!(test) { 1024 * 1024 } else { 64 * 1024 * 1024 };
/// How often, at most, the WAL is checkpointed while writes come in.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(50);
/// Every time this many more jobs are waiting for the writer, the thread queueing the last one yields its core
/// (see the module's doc, "Scheduling"). 16, 20 and 24 measured alike; 8 and 12 made too many small commits.
const HAND_OVER_AT: usize = 16;
/// How long the writer waits for more jobs to join a batch when writes come in numbers.
const GATHER: Duration = Duration::from_micros(200);
/// How long a statement waits for a lock held by another process (the admin CLI) before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// The writer connection's page cache, in KiB: room for a full batch's pages and the indexes' inner pages. At 32 MiB it
/// filled up in write-heavy runs and held most of the server's memory (38 MB of 65 MB; `docs/performance.md`, "What the
/// figures rest on").
const WRITER_CACHE_KIB: u32 = 8 * 1024;
/// Prepared statements cached per connection.
const STATEMENT_CACHE: usize = 64;

/// Maps a driver error into the store's terms.
pub(crate) fn map_err(e: rusqlite::Error) -> StoreError {
    use rusqlite::ffi;
    match &e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            let text = msg.clone().unwrap_or_else(|| e.to_string());
            match f.code {
                rusqlite::ErrorCode::ConstraintViolation
                    if matches!(f.extended_code, ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY) =>
                {
                    StoreError::Conflict(text)
                }
                rusqlite::ErrorCode::DatabaseBusy
                | rusqlite::ErrorCode::DatabaseLocked
                | rusqlite::ErrorCode::SystemIoFailure
                | rusqlite::ErrorCode::DiskFull
                | rusqlite::ErrorCode::CannotOpen => StoreError::Unavailable(text),
                _ => StoreError::Other(text),
            }
        }
        _ => StoreError::Other(e.to_string()),
    }
}

/// One write job: runs inside the batch's transaction, is answered after the commit.
trait WriteJob: Send {
    /// Whether the batch's commit must be fsynced for this job.
    fn durability(&self) -> Durability;
    /// Runs the job; false when its savepoint must be rolled back.
    fn run(&mut self, conn: &mut Connection) -> bool;
    /// Answers the caller with the job's result, or with the commit's failure.
    fn finish(self: Box<Self>, committed: Result<(), &StoreError>);
}

struct Job<F, R> {
    durability: Durability,
    work: Option<F>,
    result: Option<StoreResult<R>>,
    reply: Option<oneshot::Sender<StoreResult<R>>>,
}

impl<F, R> WriteJob for Job<F, R>
where
    F: FnOnce(&mut Connection) -> StoreResult<Outcome<R>> + Send,
    R: Send,
{
    fn durability(&self) -> Durability {
        self.durability
    }

    fn run(&mut self, conn: &mut Connection) -> bool {
        let Some(work) = self.work.take() else { return false };
        let (result, keep) = match work(conn) {
            Ok(Outcome::Keep(r)) => (Ok(r), true),
            Ok(Outcome::Discard(r)) => (Ok(r), false),
            Err(e) => (Err(e), false),
        };
        self.result = Some(result);
        keep
    }

    fn finish(mut self: Box<Self>, committed: Result<(), &StoreError>) {
        let result = match (self.result.take(), committed) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(_)), Err(e)) | (None, Err(e)) => Err(clone_err(e)),
            (Some(Ok(r)), Ok(())) => Ok(r),
            (None, Ok(())) => Err(StoreError::Other("a write job did not run".into())),
        };
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(result);
        }
    }
}

fn clone_err(e: &StoreError) -> StoreError {
    match e {
        StoreError::Conflict(s) => StoreError::Conflict(s.clone()),
        StoreError::Unavailable(s) => StoreError::Unavailable(s.clone()),
        StoreError::Other(s) => StoreError::Other(s.clone()),
    }
}

/// The open database: the writer's queue and the read pool.
pub(crate) struct Engine {
    path: PathBuf,
    jobs: mpsc::Sender<Box<dyn WriteJob>>,
    /// Jobs sent and not yet taken into a batch by the writer.
    queued: Arc<AtomicUsize>,
    readers: Mutex<Vec<Connection>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SqliteEngine({})", self.path.display())
    }
}

/// Opens a connection with the settings every connection needs.
fn connect(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
    Ok(conn)
}

impl Engine {
    /// Opens (creating if needed) the database file, migrates it and starts the writer thread.
    pub(crate) fn open(path: &Path) -> StoreResult<Arc<Self>> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let mut writer = connect(path, flags).map_err(map_err)?;
        // The writer touches every index a write changes: a larger page cache than the readers' keeps their inner
        // pages (and a large batch's pages) in memory. Readers keep SQLite's default (2 MiB each).
        writer.execute_batch(&format!("PRAGMA cache_size = -{WRITER_CACHE_KIB};")).map_err(map_err)?;
        // WAL: readers never wait for the writer. Commits are made durable by the syncer (see the module's doc).
        let mode: String = writer.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(map_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Other(format!("SQLite refused WAL mode (journal_mode is {mode})")));
        }
        migrate(&writer)?;
        // Checkpoints (copying the WAL back into the database file, with its fsync) run on a thread of their
        // own instead of inside a commit every 1000 pages: the writer's batches never wait for one, and the
        // copying overlaps with the writer's fsyncs. A passive checkpoint never blocks the writer or readers.
        writer
            .execute_batch(&format!("PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = {WAL_SIZE_LIMIT};"))
            .map_err(map_err)?;
        let checkpointer = connect(path, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(map_err)?;
        let (committed_tx, committed_rx) = mpsc::sync_channel::<()>(1);
        let wal_frames = Arc::new(AtomicI64::new(0));
        let frames = Arc::clone(&wal_frames);
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                batch_scheduling();
                checkpoint_loop(&checkpointer, &committed_rx, &frames)
            })
            .map_err(|e| StoreError::Other(format!("starting the SQLite checkpointer: {e}")))?;
        let wal = wal_path(path);
        let (to_sync, unsynced) = mpsc::channel::<Vec<Box<dyn WriteJob>>>();
        std::thread::Builder::new()
            .name("sqlite-syncer".into())
            .spawn(move || {
                batch_scheduling();
                sync_loop(&wal, &unsynced)
            })
            .map_err(|e| StoreError::Other(format!("starting the SQLite syncer: {e}")))?;
        let (tx, rx) = mpsc::channel::<Box<dyn WriteJob>>();
        let queued = Arc::new(AtomicUsize::new(0));
        let taken = Arc::clone(&queued);
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                batch_scheduling();
                write_loop(&mut writer, &rx, &taken, &to_sync, &committed_tx, &wal_frames)
            })
            .map_err(|e| StoreError::Other(format!("starting the SQLite writer: {e}")))?;
        Ok(Arc::new(Self { path: path.to_owned(), jobs: tx, queued, readers: Mutex::new(Vec::new()) }))
    }

    /// Runs `f` in the writer's next transaction; answers once that transaction is committed (and, for a
    /// durable write, fsynced).
    pub(crate) async fn write<R, F>(&self, durability: Durability, f: F) -> StoreResult<R>
    where
        F: FnOnce(&mut Connection) -> StoreResult<Outcome<R>> + Send + 'static,
        R: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Box<dyn WriteJob> = Box::new(Job { durability, work: Some(f), result: None, reply: Some(reply) });
        // Counted before it is sent, so that the writer never takes a job it was not told of.
        let waiting = self.queued.fetch_add(1, Ordering::Relaxed) + 1;
        if self.jobs.send(job).is_err() {
            return Err(StoreError::Unavailable("the SQLite writer has stopped".into()));
        }
        // Every HAND_OVER_AT-th job waiting, the calling thread offers its core to the writer (see the module's
        // doc, "Scheduling"); with a core to spare the writer is already running, and this costs one system call.
        if waiting.is_multiple_of(HAND_OVER_AT) {
            std::thread::yield_now();
        }
        answer.await.map_err(|_| StoreError::Unavailable("the SQLite writer has stopped".into()))?
    }

    /// Jobs sent and not yet taken into a batch by the writer.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Runs a read on a pooled connection, on the calling thread.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<R>) -> StoreResult<R> {
        let pooled = self.readers.lock().ok().and_then(|mut r| r.pop());
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = connect(&self.path, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(map_err)?;
                c.execute_batch("PRAGMA query_only = ON;").map_err(map_err)?;
                c
            }
        };
        let result = f(&conn).map_err(map_err);
        if let Ok(mut idle) = self.readers.lock() {
            if idle.len() < MAX_IDLE_READERS {
                idle.push(conn);
            }
        }
        result
    }

    /// Runs a read that may take long (a listing) on the blocking pool.
    pub(crate) async fn read_blocking<R, F>(self: &Arc<Self>, f: F) -> StoreResult<R>
    where
        F: FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let engine = Arc::clone(self);
        tokio::task::spawn_blocking(move || engine.read(f))
            .await
            .map_err(|e| StoreError::Other(format!("a read task failed: {e}")))?
    }
}

/// Puts the calling thread under `SCHED_BATCH` at niceness 0 (see the module's doc). Elsewhere than on Linux,
/// or when the system refuses, the thread keeps the default policy: only the batching on a busy core is lost.
fn batch_scheduling() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::unix::{
            set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy, ThreadSchedulePolicy,
        };
        use thread_priority::ThreadPriority;
        let batch = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch);
        // `Os(0)` is niceness 0, the default: the policy changes, the thread's share of the CPU does not.
        if let Err(e) =
            set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Os(Default::default()), batch)
        {
            tracing::debug!(error = ?e, "SCHED_BATCH refused; the SQLite threads keep the default policy");
        }
    }
}

/// The writer thread: batches jobs until the store is dropped. A committed batch holding a durable job goes to
/// the syncer; any other batch is answered at once.
///
/// The WAL starts again from its beginning only when a checkpoint has copied every frame in it; the
/// checkpointer's passes never get there while writes keep coming (new frames arrive during each pass), so under
/// steady load the WAL would grow without end. When the checkpointer reports a WAL longer than
/// [`WAL_RESTART_FRAMES`], the writer runs a passive checkpoint itself between two batches: no frame can arrive
/// during it, the checkpointer has already copied most of the WAL, and the next transaction starts the WAL
/// again (cut back to [`WAL_SIZE_LIMIT`]).
fn write_loop(
    conn: &mut Connection,
    jobs: &mpsc::Receiver<Box<dyn WriteJob>>,
    queued: &AtomicUsize,
    to_sync: &mpsc::Sender<Vec<Box<dyn WriteJob>>>,
    checkpoint: &mpsc::SyncSender<()>,
    wal_frames: &AtomicI64,
) {
    let mut last_batch = 0;
    while let Ok(first) = jobs.recv() {
        let mut batch: Vec<Box<dyn WriteJob>> = Vec::with_capacity(MAX_BATCH);
        batch.push(first);
        // Writers are waiting in numbers (the last batch had company): give them a moment to join this one,
        // so that one commit serves them all instead of each starting a commit of its own.
        let deadline = (last_batch > 1).then(|| Instant::now() + GATHER);
        while batch.len() < MAX_BATCH {
            let next = match deadline {
                Some(deadline) => jobs.recv_timeout(deadline.saturating_duration_since(Instant::now())).ok(),
                None => jobs.try_recv().ok(),
            };
            match next {
                Some(job) => batch.push(job),
                None => break,
            }
        }
        last_batch = batch.len();
        let left = queued.fetch_sub(batch.len(), Ordering::Relaxed) - batch.len();
        crate::db::measured::WRITER_QUEUE.set(i64::try_from(left).unwrap_or(i64::MAX));
        crate::db::measured::GROUP_COMMIT.observe(batch.len() as f64);
        let durable = batch.iter().any(|j| j.durability() == Durability::Durable);
        let started = Instant::now();
        let committed = run_batch(conn, &mut batch);
        match &committed {
            Ok(()) => {
                tracing::trace!(jobs = batch.len(), durable, micros = started.elapsed().as_micros() as u64, "committed")
            }
            Err(e) => tracing::warn!(error = %e, jobs = batch.len(), "SQLite write batch failed"),
        }
        match committed {
            // The syncer answers once the WAL is on disk; if it has stopped, nothing can be made durable.
            Ok(()) if durable => {
                if let Err(mpsc::SendError(batch)) = to_sync.send(batch) {
                    let stopped = StoreError::Unavailable("the SQLite syncer has stopped".into());
                    finish(batch, Err(&stopped));
                }
            }
            committed => finish(batch, committed.as_ref().map(|_| ())),
        }
        if wal_frames.load(Ordering::Relaxed) > WAL_RESTART_FRAMES {
            let started = Instant::now();
            match passive_checkpoint(conn) {
                Ok(Some((log, copied))) if log == copied => {
                    wal_frames.store(0, Ordering::Relaxed);
                    tracing::debug!(frames = log, micros = started.elapsed().as_micros() as u64, "WAL restarts");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "SQLite checkpoint"),
            }
        }
        // Wakes the checkpointer (a wake-up already pending is enough).
        let _ = checkpoint.try_send(());
    }
}

/// A passive checkpoint: the WAL's length and how much of it is now copied, in frames; `None` when it could not
/// run (another checkpoint was running).
fn passive_checkpoint(conn: &Connection) -> rusqlite::Result<Option<(i64, i64)>> {
    let (busy, log, copied): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok((busy == 0 && log >= 0).then_some((log, copied)))
}

/// Answers every job of a batch.
fn finish(batch: Vec<Box<dyn WriteJob>>, committed: Result<(), &StoreError>) {
    for job in batch {
        job.finish(committed);
    }
}

/// The syncer thread: takes every committed batch waiting, fdatasyncs the WAL once for all of them, then
/// answers their jobs. It stops when the writer does.
fn sync_loop(wal: &Path, batches: &mpsc::Receiver<Vec<Box<dyn WriteJob>>>) {
    let mut waiting: Vec<Vec<Box<dyn WriteJob>>> = Vec::new();
    while let Ok(first) = batches.recv() {
        waiting.push(first);
        waiting.extend(batches.try_iter());
        let started = Instant::now();
        let synced = sync_file(wal);
        match &synced {
            Ok(()) => {
                tracing::trace!(batches = waiting.len(), micros = started.elapsed().as_micros() as u64, "WAL synced")
            }
            Err(e) => tracing::error!(error = %e, "fdatasync of the SQLite WAL failed"),
        }
        for batch in waiting.drain(..) {
            finish(batch, synced.as_ref().map(|_| ()));
        }
    }
}

/// Flushes a file's data to the disk. The file is opened each time, so that a WAL file SQLite has deleted and
/// made again (it does when the last connection closes) is never missed through an old descriptor.
fn sync_file(path: &Path) -> StoreResult<()> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_data())
        .map_err(|e| StoreError::Unavailable(format!("syncing {}: {e}", path.display())))
}

/// The WAL file of the database at `path` (SQLite names it `<database>-wal`).
fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// The checkpointer: after commits, at most every [`CHECKPOINT_EVERY`], copies the WAL into the database file.
/// It stops when the writer does.
/// It reports the WAL's length to the writer (see [`write_loop`]).
fn checkpoint_loop(conn: &Connection, committed: &mpsc::Receiver<()>, wal_frames: &AtomicI64) {
    while committed.recv().is_ok() {
        std::thread::sleep(CHECKPOINT_EVERY);
        while committed.try_recv().is_ok() {}
        match passive_checkpoint(conn) {
            Ok(Some((log, _))) => wal_frames.store(log, Ordering::Relaxed),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "SQLite checkpoint"),
        }
    }
}

/// Runs a batch in one transaction, each job in a savepoint; the result is the commit's.
/// The connection is taken by `&mut` so that a job can hand it to a unit of work whose statements must be `Send`.
fn run_batch(conn: &mut Connection, batch: &mut [Box<dyn WriteJob>]) -> StoreResult<()> {
    let exec = |conn: &Connection, sql: &str| {
        conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map(|_| ()).map_err(map_err)
    };
    exec(conn, "BEGIN IMMEDIATE")?;
    let body = (|| {
        for job in batch.iter_mut() {
            exec(conn, "SAVEPOINT job")?;
            if !job.run(conn) {
                exec(conn, "ROLLBACK TO job")?;
            }
            exec(conn, "RELEASE job")?;
        }
        let started = Instant::now();
        let committed = exec(conn, "COMMIT");
        tracing::trace!(micros = started.elapsed().as_micros() as u64, "commit");
        committed
    })();
    if body.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    body
}

/// Applies the migrations not yet applied, recording them in the ledger ([`crate::migrations`]).
fn migrate(conn: &Connection) -> StoreResult<()> {
    migrate_up_to(conn, i64::MAX)
}

/// Applies the migrations not yet applied up to `version` (tests start from an earlier schema with it).
pub(super) fn migrate_up_to(conn: &Connection, version: i64) -> StoreResult<()> {
    let fail = |e: rusqlite::Error| StoreError::Other(format!("migration failed: {e}"));
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
            version BIGINT PRIMARY KEY,
            description TEXT NOT NULL,
            installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
            success BOOLEAN NOT NULL,
            checksum BLOB NOT NULL,
            execution_time BIGINT NOT NULL
        );",
    )
    .map_err(fail)?;
    // A database numbered as before the folders were in step has its ledger rewritten first.
    crate::migrations::carry_over_sqlite(conn)?;
    let ledger = conn
        .prepare("SELECT version, success, checksum FROM _sqlx_migrations")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(fail)?;
    for m in crate::migrations::pending(crate::migrations::SQLITE_STEPS, &ledger, version)? {
        let started = std::time::Instant::now();
        conn.execute_batch("BEGIN IMMEDIATE").map_err(fail)?;
        let result = conn.execute_batch(m.sql).and_then(|()| {
            conn.execute(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                 VALUES (?1, ?2, TRUE, ?3, ?4)",
                rusqlite::params![
                    m.version,
                    m.description,
                    m.checksum(),
                    i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX)
                ],
            )
        });
        match result {
            Ok(_) => conn.execute_batch("COMMIT").map_err(fail)?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(fail(e));
            }
        }
    }
    Ok(())
}
