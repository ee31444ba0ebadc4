//! The rating database: one SQLite file holding the catalogue of episodes,
//! the comparisons chosen for rating, when each was first shown to each
//! rater, and the answers.
//!
//! Durability and concurrency come from SQLite itself: the file is in WAL
//! mode, every change is one transaction, and every connection waits up to
//! [`BUSY_TIMEOUT`] for another's write, so several raters (pages, or
//! servers on the same file) can answer at once. An answer is keyed by
//! `UNIQUE (comparison, rater)`: a submit repeated after the server was
//! killed finds the first one committed (and is told so) or not (and is
//! stored now), never both, never neither.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params,
};

use super::RateError;
use super::answer::{Answer, Choice, Factor, FactorChoices, Rater, Verdict};
use super::episode::EpisodeInfo;

/// How long a connection waits for another's write before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a pair shown to one rater is kept from others: two raters at once
/// get different pairs, and a pair left open is offered again after this.
pub const CLAIM: Duration = Duration::from_secs(15 * 60);
/// The schema's version, in SQLite's `user_version`.
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    episode_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    goal TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY,
    left_episode INTEGER NOT NULL REFERENCES episodes(id),
    right_episode INTEGER NOT NULL REFERENCES episodes(id),
    left_agent TEXT NOT NULL,
    right_agent TEXT NOT NULL,
    goal TEXT NOT NULL,
    created REAL NOT NULL,
    CHECK (left_episode <> right_episode)
);
CREATE TABLE IF NOT EXISTS views (
    comparison INTEGER NOT NULL REFERENCES comparisons(id),
    rater TEXT NOT NULL,
    shown_at REAL NOT NULL,
    PRIMARY KEY (comparison, rater)
);
CREATE TABLE IF NOT EXISTS answers (
    id INTEGER PRIMARY KEY,
    comparison INTEGER NOT NULL REFERENCES comparisons(id),
    rater TEXT NOT NULL,
    overall TEXT NOT NULL CHECK (overall IN ('left', 'right', 'draw')),
    built_more TEXT NOT NULL CHECK (built_more IN ('left', 'right', 'draw', 'na')),
    broke_fewer TEXT NOT NULL CHECK (broke_fewer IN ('left', 'right', 'draw', 'na')),
    helped_more TEXT NOT NULL CHECK (helped_more IN ('left', 'right', 'draw', 'na')),
    human_like TEXT NOT NULL CHECK (human_like IN ('left', 'right', 'draw', 'na')),
    justification TEXT NOT NULL CHECK (length(justification) >= 100),
    shown_at REAL,
    submitted_at REAL NOT NULL,
    seconds REAL,
    UNIQUE (comparison, rater)
);
";

/// A catalogued episode with its id in the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEpisode {
    /// Its row id.
    pub id: i64,
    /// What the catalogue says of it.
    pub info: EpisodeInfo,
}

/// A comparison: two episodes of different agents on one goal, the left one
/// shown on the left.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Its id.
    pub id: i64,
    /// The left episode's row id.
    pub left: i64,
    /// The right episode's row id.
    pub right: i64,
    /// The left episode's agent when the pair was made.
    pub left_agent: String,
    /// The right episode's agent.
    pub right_agent: String,
    /// The goal both episodes share.
    pub goal: String,
    /// How many answers it has.
    pub answers: usize,
}

/// A comparison as shown to a rater.
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    /// The comparison's id.
    pub comparison: i64,
    /// The left episode's row id.
    pub left: i64,
    /// The right episode's row id.
    pub right: i64,
    /// When it was first shown to this rater (Unix seconds).
    pub shown_at: f64,
    /// Comparisons still without an answer, this one included.
    pub pending: usize,
}

/// What storing an answer did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Saved {
    /// It is stored now; `seconds` from first shown to submitted, if the pair
    /// was shown to the rater through [`Db::next_for`].
    New {
        /// Answering time.
        seconds: Option<f64>,
    },
    /// The same answer was stored before (a retried submit): nothing changed.
    Already,
}

/// A stored answer with what the leaderboard needs of its comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredAnswer {
    /// The answer's row id.
    pub id: i64,
    /// The comparison.
    pub comparison: i64,
    /// Who answered.
    pub rater: String,
    /// The left episode's agent.
    pub left_agent: String,
    /// The right episode's agent.
    pub right_agent: String,
    /// The verdict.
    pub overall: Verdict,
    /// The comparative questions.
    pub factors: FactorChoices,
    /// The justification.
    pub justification: String,
    /// First shown (Unix seconds), if known.
    pub shown_at: Option<f64>,
    /// Submitted (Unix seconds).
    pub submitted_at: f64,
    /// Seconds from shown to submitted, if known.
    pub seconds: Option<f64>,
}

/// An open rating database.
#[derive(Debug)]
pub struct Db {
    conn: Connection,
    path: PathBuf,
}

impl Db {
    /// Opens `path`, creating it (and its tables) if missing, in WAL mode.
    pub fn open(path: &Path) -> Result<Self, RateError> {
        let db = Self::with_flags(path, OpenFlags::default())?;
        let mode: String = db
            .conn
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(db.err())?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(RateError::Db {
                path: path.to_owned(),
                message: format!("the file cannot be put in WAL mode (it is in {mode} mode)"),
            });
        }
        let version: i64 = db
            .conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(db.err())?;
        if version > SCHEMA_VERSION {
            return Err(RateError::Db {
                path: path.to_owned(),
                message: format!(
                    "schema version {version} is newer than this mbag's {SCHEMA_VERSION}"
                ),
            });
        }
        db.conn
            .execute_batch(&format!(
                "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))
            .map_err(db.err())?;
        Ok(db)
    }

    /// Connects to an existing database made by [`Db::open`] (the server's
    /// per-request connections): never creates a file.
    pub fn connect(path: &Path) -> Result<Self, RateError> {
        let db = Self::with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let version: i64 = db
            .conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(db.err())?;
        if version != SCHEMA_VERSION {
            return Err(RateError::Db {
                path: path.to_owned(),
                message: format!(
                    "not a rating database of schema {SCHEMA_VERSION} (it has {version}); \
                     make it with `mbag rate pairs`"
                ),
            });
        }
        Ok(db)
    }

    fn with_flags(path: &Path, flags: OpenFlags) -> Result<Self, RateError> {
        let err = db_error(path);
        let conn = Connection::open_with_flags(path, flags).map_err(&err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(&err)?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(&err)?;
        Ok(Self {
            conn,
            path: path.to_owned(),
        })
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> RateError + '_ {
        db_error(&self.path)
    }

    /// Runs `work` in one transaction that takes the write lock at its start
    /// (`BEGIN IMMEDIATE`: two writers wait for each other through the busy
    /// timeout, where deferred ones could both read and then one fail to
    /// write), and commits if `work` succeeds; an error rolls it all back.
    /// `work` gets the transaction and this file's error constructor.
    fn write<T>(
        &mut self,
        work: impl FnOnce(
            &Transaction<'_>,
            &dyn Fn(rusqlite::Error) -> RateError,
        ) -> Result<T, RateError>,
    ) -> Result<T, RateError> {
        let err = db_error(&self.path);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        let value = work(&tx, &err)?;
        tx.commit().map_err(&err)?;
        Ok(value)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The journal mode SQLite reports (`wal` for every database made here).
    pub fn journal_mode(&self) -> Result<String, RateError> {
        self.conn
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .map_err(self.err())
    }

    /// Adds episodes to the catalogue, or updates the ones whose path is
    /// there already; returns their row ids in order. One transaction.
    pub fn upsert_episodes(&mut self, episodes: &[EpisodeInfo]) -> Result<Vec<i64>, RateError> {
        self.write(|tx, err| {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO episodes (path, episode_id, agent, goal) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (path) DO UPDATE SET episode_id = excluded.episode_id,
                         agent = excluded.agent, goal = excluded.goal
                     RETURNING id",
                )
                .map_err(err)?;
            episodes
                .iter()
                .map(|e| {
                    stmt.query_row(params![e.path, e.episode_id, e.agent, e.goal], |row| {
                        row.get(0)
                    })
                    .map_err(err)
                })
                .collect()
        })
    }

    /// Every catalogued episode, by id.
    pub fn episodes(&self) -> Result<Vec<StoredEpisode>, RateError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes ORDER BY id"
            ))
            .map_err(self.err())?;
        stmt.query_map([], episode_row)
            .and_then(|rows| rows.collect())
            .map_err(self.err())
    }

    /// One catalogued episode.
    pub fn episode(&self, id: i64) -> Result<Option<StoredEpisode>, RateError> {
        self.conn
            .query_row(
                &format!("SELECT {EPISODE_COLUMNS} FROM episodes WHERE id = ?1"),
                [id],
                episode_row,
            )
            .optional()
            .map_err(self.err())
    }

    /// Adds comparisons of `(left, right)` episode ids at time `now` (Unix
    /// seconds), copying each episode's agent and goal; one transaction.
    /// Returns their ids.
    pub fn add_comparisons(
        &mut self,
        pairs: &[(i64, i64)],
        now: f64,
    ) -> Result<Vec<i64>, RateError> {
        self.write(|tx, err| {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO comparisons
                         (left_episode, right_episode, left_agent, right_agent, goal, created)
                     SELECT l.id, r.id, l.agent, r.agent, l.goal, ?3
                     FROM episodes l, episodes r WHERE l.id = ?1 AND r.id = ?2
                     RETURNING id",
                )
                .map_err(err)?;
            pairs
                .iter()
                .map(|&(left, right)| {
                    let id: Option<i64> = stmt
                        .query_row(params![left, right, now], |row| row.get(0))
                        .optional()
                        .map_err(err)?;
                    id.ok_or(RateError::UnknownEpisodes { left, right })
                })
                .collect()
        })
    }

    /// Every comparison, by id, with its number of answers.
    pub fn comparisons(&self) -> Result<Vec<Comparison>, RateError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT c.id, c.left_episode, c.right_episode, c.left_agent, c.right_agent,
                        c.goal, (SELECT count(*) FROM answers a WHERE a.comparison = c.id)
                 FROM comparisons c ORDER BY c.id",
            )
            .map_err(self.err())?;
        stmt.query_map([], |row| {
            Ok(Comparison {
                id: row.get(0)?,
                left: row.get(1)?,
                right: row.get(2)?,
                left_agent: row.get(3)?,
                right_agent: row.get(4)?,
                goal: row.get(5)?,
                answers: row.get::<_, i64>(6)? as usize,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(self.err())
    }

    /// The next pair for `rater` at `now` (Unix seconds), recorded as shown to
    /// them (the first time only: answering time counts from then). Pending
    /// pairs (no answer yet) the rater has seen come first (a reload resumes),
    /// then the oldest not shown to another rater within [`CLAIM`]. `None`
    /// when nothing is left for them. One transaction, so two raters asking
    /// at once get different pairs.
    pub fn next_for(&mut self, rater: &Rater, now: f64) -> Result<Option<Shown>, RateError> {
        self.write(|tx, err| {
            let claimed_since = now - CLAIM.as_secs_f64();
            let next: Option<(i64, i64, i64)> = tx
                .query_row(
                    "SELECT c.id, c.left_episode, c.right_episode FROM comparisons c
                     WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE a.comparison = c.id)
                       AND NOT EXISTS (SELECT 1 FROM views v WHERE v.comparison = c.id
                                       AND v.rater <> ?1 AND v.shown_at > ?2)
                     ORDER BY EXISTS (SELECT 1 FROM views v WHERE v.comparison = c.id
                                      AND v.rater = ?1) DESC, c.id
                     LIMIT 1",
                    params![rater.as_str(), claimed_since],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .optional()
                .map_err(err)?;
            let Some((comparison, left, right)) = next else {
                return Ok(None);
            };
            tx.execute(
                "INSERT INTO views (comparison, rater, shown_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (comparison, rater) DO NOTHING",
                params![comparison, rater.as_str(), now],
            )
            .map_err(err)?;
            // Just written, or kept from the first time it was shown.
            let shown_at = shown_at(tx, comparison, rater.as_str())
                .and_then(|s| s.ok_or(rusqlite::Error::QueryReturnedNoRows))
                .map_err(err)?;
            let pending: i64 = tx
                .query_row(
                    "SELECT count(*) FROM comparisons c
                     WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE a.comparison = c.id)",
                    [],
                    |row| row.get(0),
                )
                .map_err(err)?;
            Ok(Some(Shown {
                comparison,
                left,
                right,
                shown_at,
                pending: pending as usize,
            }))
        })
    }

    /// Stores `answer`, submitted at `now` (Unix seconds), in one transaction.
    /// The same answer again is [`Saved::Already`]; a different one from the
    /// same rater for the same pair is [`RateError::Conflict`] (the first
    /// stands); an unknown comparison is [`RateError::UnknownComparison`], and
    /// one never handed to this rater by [`Db::next_for`] is
    /// [`RateError::NotShown`].
    pub fn save_answer(&mut self, answer: &Answer, now: f64) -> Result<Saved, RateError> {
        self.write(|tx, err| {
            let known: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM comparisons WHERE id = ?1)",
                    [answer.comparison],
                    |row| row.get(0),
                )
                .map_err(err)?;
            if !known {
                return Err(RateError::UnknownComparison(answer.comparison));
            }
            let before = tx
                .query_row(
                    "SELECT overall, built_more, broke_fewer, helped_more, human_like, justification
                     FROM answers WHERE comparison = ?1 AND rater = ?2",
                    params![answer.comparison, answer.rater.as_str()],
                    |row| {
                        Ok([
                            row.get::<_, String>(0)?,
                            row.get(1)?,
                            row.get(2)?,
                            row.get(3)?,
                            row.get(4)?,
                            row.get(5)?,
                        ])
                    },
                )
                .optional()
                .map_err(err)?;
            if let Some(before) = before {
                return if before == columns(answer) {
                    Ok(Saved::Already)
                } else {
                    Err(RateError::Conflict {
                        comparison: answer.comparison,
                        rater: answer.rater.as_str().to_owned(),
                    })
                };
            }
            let Some(shown_at) =
                shown_at(tx, answer.comparison, answer.rater.as_str()).map_err(err)?
            else {
                return Err(RateError::NotShown {
                    comparison: answer.comparison,
                    rater: answer.rater.as_str().to_owned(),
                });
            };
            let seconds = Some((now - shown_at).max(0.0));
            let [overall, built, broke, helped, human, justification] = columns(answer);
            tx.execute(
                "INSERT INTO answers (comparison, rater, overall, built_more, broke_fewer,
                     helped_more, human_like, justification, shown_at, submitted_at, seconds)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    answer.comparison,
                    answer.rater.as_str(),
                    overall,
                    built,
                    broke,
                    helped,
                    human,
                    justification,
                    shown_at,
                    now,
                    seconds
                ],
            )
            .map_err(err)?;
            Ok(Saved::New { seconds })
        })
    }

    /// Every answer in the order they were submitted (ties by id): the order
    /// TrueSkill takes them in.
    pub fn answers(&self) -> Result<Vec<StoredAnswer>, RateError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT a.id, a.comparison, a.rater, c.left_agent, c.right_agent, a.overall,
                        a.built_more, a.broke_fewer, a.helped_more, a.human_like,
                        a.justification, a.shown_at, a.submitted_at, a.seconds
                 FROM answers a JOIN comparisons c ON c.id = a.comparison
                 ORDER BY a.submitted_at, a.id",
            )
            .map_err(self.err())?;
        let bad = |column: usize, value: String| {
            rusqlite::Error::FromSqlConversionFailure(
                column,
                rusqlite::types::Type::Text,
                format!("{value:?} is not a known choice").into(),
            )
        };
        stmt.query_map([], |row| {
            let overall: String = row.get(5)?;
            let mut factors = [Choice::NotApplicable; Factor::ALL.len()];
            for (i, slot) in factors.iter_mut().enumerate() {
                let name: String = row.get(6 + i)?;
                *slot = Choice::from_name(&name).ok_or_else(|| bad(6 + i, name))?;
            }
            Ok(StoredAnswer {
                id: row.get(0)?,
                comparison: row.get(1)?,
                rater: row.get(2)?,
                left_agent: row.get(3)?,
                right_agent: row.get(4)?,
                overall: Verdict::from_name(&overall).ok_or_else(|| bad(5, overall))?,
                factors: FactorChoices(factors),
                justification: row.get(10)?,
                shown_at: row.get(11)?,
                submitted_at: row.get(12)?,
                seconds: row.get(13)?,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(self.err())
    }
}

/// The error of a failed SQLite call on the database at `path`.
fn db_error(path: &Path) -> impl Fn(rusqlite::Error) -> RateError + '_ {
    move |e| RateError::Db {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// The columns of `episodes` that [`episode_row`] reads, in its order.
const EPISODE_COLUMNS: &str = "id, path, episode_id, agent, goal";

/// A catalogued episode from a row of [`EPISODE_COLUMNS`].
fn episode_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredEpisode> {
    Ok(StoredEpisode {
        id: row.get(0)?,
        info: EpisodeInfo {
            path: row.get(1)?,
            episode_id: row.get(2)?,
            agent: row.get(3)?,
            goal: row.get(4)?,
        },
    })
}

/// When `comparison` was first shown to `rater`, if it was.
fn shown_at(tx: &Transaction<'_>, comparison: i64, rater: &str) -> rusqlite::Result<Option<f64>> {
    tx.query_row(
        "SELECT shown_at FROM views WHERE comparison = ?1 AND rater = ?2",
        params![comparison, rater],
        |row| row.get(0),
    )
    .optional()
}

/// An answer's stored columns (verdict, factors, justification).
fn columns(answer: &Answer) -> [String; 6] {
    let f = |factor| answer.factors.get(factor).name().to_owned();
    [
        answer.overall.name().to_owned(),
        f(Factor::BuiltMore),
        f(Factor::BrokeFewer),
        f(Factor::HelpedMore),
        f(Factor::HumanLike),
        answer.justification.as_str().to_owned(),
    ]
}

/// Now, in Unix seconds.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rate::answer::{AnswerForm, Justification};

    /// Episodes `a0, a1, b0, b1, c0` (agent = first letter) on goal `g`.
    pub(crate) fn catalogued(db: &mut Db) -> Vec<i64> {
        let eps: Vec<EpisodeInfo> = ["a0", "a1", "b0", "b1", "c0"]
            .iter()
            .map(|name| EpisodeInfo {
                path: format!("{name}.jsonl"),
                episode_id: (*name).to_owned(),
                agent: name[..1].to_owned(),
                goal: "g".into(),
            })
            .collect();
        db.upsert_episodes(&eps).unwrap()
    }

    pub(crate) fn answer(comparison: i64, rater: &str, overall: Verdict) -> Answer {
        Answer::try_from(AnswerForm {
            comparison,
            rater: rater.into(),
            overall,
            built_more: Choice::Left,
            broke_fewer: Choice::Draw,
            helped_more: Choice::Right,
            human_like: Choice::NotApplicable,
            justification: "because ".repeat(15),
        })
        .unwrap()
    }

    #[test]
    fn a_new_database_is_a_wal_file_and_reopens_with_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rate.sqlite");
        let mut db = Db::open(&path).unwrap();
        assert_eq!(db.journal_mode().unwrap(), "wal");
        let ids = catalogued(&mut db);
        // The same paths again update rather than duplicate.
        assert_eq!(catalogued(&mut db), ids);
        db.add_comparisons(&[(ids[0], ids[2])], 1.0).unwrap();
        drop(db);
        let db = Db::connect(&path).unwrap();
        assert_eq!(db.episodes().unwrap().len(), 5);
        let c = &db.comparisons().unwrap()[0];
        assert_eq!((c.left_agent.as_str(), c.right_agent.as_str()), ("a", "b"));
        assert!(Db::connect(&dir.path().join("missing.sqlite")).is_err());
        assert!(!dir.path().join("missing.sqlite").exists());
    }

    #[test]
    fn a_repeated_submit_is_stored_once_and_a_changed_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(&dir.path().join("rate.sqlite")).unwrap();
        let ids = catalogued(&mut db);
        let c = db.add_comparisons(&[(ids[0], ids[2])], 1.0).unwrap()[0];
        let rater = Rater::new("r").unwrap();
        let shown = db.next_for(&rater, 100.0).unwrap().unwrap();
        assert_eq!((shown.comparison, shown.pending), (c, 1));
        // Shown again later: the first time counts.
        assert_eq!(db.next_for(&rater, 130.0).unwrap().unwrap().shown_at, 100.0);
        let first = answer(c, "r", Verdict::Left);
        assert_eq!(
            db.save_answer(&first, 142.5).unwrap(),
            Saved::New {
                seconds: Some(42.5)
            }
        );
        assert_eq!(db.save_answer(&first, 150.0).unwrap(), Saved::Already);
        let changed = answer(c, "r", Verdict::Right);
        assert!(matches!(
            db.save_answer(&changed, 151.0),
            Err(RateError::Conflict { .. })
        ));
        let answers = db.answers().unwrap();
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].overall, Verdict::Left);
        assert_eq!(answers[0].seconds, Some(42.5));
        assert_eq!(answers[0].factors.get(Factor::HelpedMore), Choice::Right);
        // A rater who was never shown the pair cannot answer it.
        assert!(matches!(
            db.save_answer(&answer(c, "s", Verdict::Draw), 160.0),
            Err(RateError::NotShown { .. })
        ));
        assert_eq!(db.answers().unwrap().len(), 1);
        // Answered, it is no longer pending.
        assert!(db.next_for(&rater, 200.0).unwrap().is_none());
        assert!(matches!(
            db.save_answer(&answer(c + 7, "r", Verdict::Left), 1.0),
            Err(RateError::UnknownComparison(_))
        ));
    }

    #[test]
    fn the_table_itself_refuses_short_justifications() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(&dir.path().join("rate.sqlite")).unwrap();
        let ids = catalogued(&mut db);
        let c = db.add_comparisons(&[(ids[0], ids[2])], 1.0).unwrap()[0];
        db.next_for(&Rater::new("r").unwrap(), 1.0).unwrap();
        let mut short = answer(c, "r", Verdict::Left);
        // Bypassing the type's check (another program writing the file).
        short.justification = Justification("too short".into());
        assert!(matches!(
            db.save_answer(&short, 2.0),
            Err(RateError::Db { .. })
        ));
        assert!(db.answers().unwrap().is_empty());
    }

    #[test]
    fn two_raters_at_once_get_different_pairs_and_both_answers_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rate.sqlite");
        let mut db = Db::open(&path).unwrap();
        let ids = catalogued(&mut db);
        let pairs: Vec<(i64, i64)> = (0..20).map(|i| (ids[i % 2], ids[2 + i % 3])).collect();
        db.add_comparisons(&pairs, 1.0).unwrap();
        let raters = ["r1", "r2", "r3"];
        let threads: Vec<_> = raters
            .iter()
            .map(|r| {
                let path = path.clone();
                let rater = Rater::new(r).unwrap();
                std::thread::spawn(move || {
                    let mut db = Db::connect(&path).unwrap();
                    let mut done = Vec::new();
                    for round in 0..6 {
                        let now = 10.0 + f64::from(round);
                        let shown = db.next_for(&rater, now).unwrap().unwrap();
                        let a = answer(shown.comparison, rater.as_str(), Verdict::Left);
                        assert!(matches!(
                            db.save_answer(&a, now + 0.5).unwrap(),
                            Saved::New { .. }
                        ));
                        done.push(shown.comparison);
                    }
                    done
                })
            })
            .collect();
        let mut judged: Vec<i64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        judged.sort_unstable();
        let len = judged.len();
        judged.dedup();
        assert_eq!(judged.len(), len, "a pair was handed to two raters");
        assert_eq!(db.answers().unwrap().len(), 18);
    }

    #[test]
    fn a_pair_left_open_by_one_rater_goes_to_another_after_the_claim() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(&dir.path().join("rate.sqlite")).unwrap();
        let ids = catalogued(&mut db);
        let c = db.add_comparisons(&[(ids[0], ids[2])], 1.0).unwrap()[0];
        let (r, s) = (Rater::new("r").unwrap(), Rater::new("s").unwrap());
        assert_eq!(db.next_for(&r, 100.0).unwrap().unwrap().comparison, c);
        assert!(db.next_for(&s, 101.0).unwrap().is_none());
        let later = 101.0 + CLAIM.as_secs_f64();
        assert_eq!(db.next_for(&s, later).unwrap().unwrap().comparison, c);
    }
}
