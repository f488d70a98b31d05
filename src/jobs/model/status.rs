//! The derived status of a job: protocol.md's status table as one pure function over what was
//! read from disk. `status` in meta.json is advisory and plays no part; a requested stop does.

use std::fmt;
use std::str::FromStr;

use crate::jobs::model::waiting::Waiting;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    Waiting,
    Running,
    Queued,
    NeedsInput,
    Limited,
    ChecksFailed,
    Failed,
    Died,
    Killed,
    Completed,
    Unknown,
}

impl Status {
    pub const ALL: [Status; 11] = [
        Status::Queued,
        Status::Running,
        Status::Waiting,
        Status::Completed,
        Status::ChecksFailed,
        Status::Failed,
        Status::Killed,
        Status::NeedsInput,
        Status::Limited,
        Status::Died,
        Status::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Waiting => "waiting",
            Status::Completed => "completed",
            Status::ChecksFailed => "checks_failed",
            Status::Failed => "failed",
            Status::Killed => "killed",
            Status::NeedsInput => "needs_input",
            Status::Limited => "limited",
            Status::Died => "died",
            Status::Unknown => "unknown",
        }
    }

    /// Still has a live agent (or is about to).
    pub fn is_active(self) -> bool {
        matches!(self, Status::Queued | Status::Running | Status::Waiting)
    }

    /// The status of a job whose agent has ended with an exit line: a requested stop makes it
    /// `killed` whatever the agent's own code.
    pub fn ended(code: i32, stop_requested: bool) -> Status {
        if stop_requested {
            Status::Killed
        } else {
            Status::from_exit_code(code)
        }
    }

    /// The status an exit line gives.
    pub fn from_exit_code(code: i32) -> Status {
        match code {
            0 => Status::Completed,
            -9 | 137 | 143 | -15 => Status::Killed,
            100 => Status::NeedsInput,
            _ => Status::Failed,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
        Status::ALL
            .into_iter()
            .find(|st| st.as_str() == wanted)
            .ok_or_else(|| {
                let names: Vec<_> = Status::ALL.iter().map(|s| s.as_str()).collect();
                format!("unknown status '{s}' (one of: {})", names.join(", "))
            })
    }
}

/// The status of a job that ended, its checks counted: an agent that ended well whose project's
/// checks then failed is `checks_failed`, not `completed`. The checks are recorded in meta.json
/// before the exit line is written, and a job is read from its exit line first, then meta.json
/// (see `job`), so a job is never seen `completed` and then `checks_failed`.
pub fn ended_checked(status: Status, checks_failed: bool) -> Status {
    match status {
        Status::Completed if checks_failed => Status::ChecksFailed,
        other => other,
    }
}

/// A job with no pid yet counts as starting for this long.
pub const STARTUP_GRACE_SECS: i64 = 30;

/// Everything the status depends on, already read from disk.
#[derive(Clone, Copy, Debug, Default)]
pub struct Evidence {
    pub has_meta: bool,
    pub has_log: bool,
    pub exit_code: Option<i32>,
    /// `None`: no pid known. `Some(alive)`: a pid, and whether it is alive.
    pub pid_alive: Option<bool>,
    /// Seconds since the job started, if known.
    pub age_secs: Option<i64>,
    pub waiting: Option<Waiting>,
    /// Someone asked for the agent to be stopped (`stop.json`, or `stop` in meta.json).
    pub stop_requested: bool,
}

/// The status of a job that ended: a failure whose last words say the account's usage limit
/// stopped it, and when the limit resets, is `limited` (a stop asked for stays `killed`).
pub fn ended_limited(code: i32, stop_requested: bool, limit_stands: bool) -> Status {
    match Status::ended(code, stop_requested) {
        Status::Failed if limit_stands => Status::Limited,
        other => other,
    }
}

pub fn derive(e: &Evidence) -> Status {
    if let Some(code) = e.exit_code {
        return Status::ended(code, e.stop_requested);
    }
    if !e.has_meta && !e.has_log && e.pid_alive.is_none() {
        return Status::Unknown;
    }
    let running = match e.pid_alive {
        Some(alive) => alive,
        None => e.age_secs.is_some_and(|age| age < STARTUP_GRACE_SECS),
    };
    match (running, e.waiting) {
        (true, Some(_)) => Status::Waiting,
        (true, None) => Status::Running,
        // Asked to stop and gone: a kill, even if nobody lived to write the exit line.
        (false, _) if e.stop_requested => Status::Killed,
        (false, _) => Status::Died,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_status_table() {
        let base = Evidence {
            has_meta: true,
            has_log: true,
            ..Evidence::default()
        };
        let q = Some(Waiting::Question);
        let cases: &[(&str, Evidence, Status)] = &[
            (
                "exit 0",
                Evidence {
                    exit_code: Some(0),
                    ..base
                },
                Status::Completed,
            ),
            (
                "exit 1",
                Evidence {
                    exit_code: Some(1),
                    ..base
                },
                Status::Failed,
            ),
            (
                "exit 2",
                Evidence {
                    exit_code: Some(2),
                    ..base
                },
                Status::Failed,
            ),
            (
                "exit -1",
                Evidence {
                    exit_code: Some(-1),
                    ..base
                },
                Status::Failed,
            ),
            (
                "exit -9",
                Evidence {
                    exit_code: Some(-9),
                    ..base
                },
                Status::Killed,
            ),
            (
                "exit 137",
                Evidence {
                    exit_code: Some(137),
                    ..base
                },
                Status::Killed,
            ),
            (
                "exit 143",
                Evidence {
                    exit_code: Some(143),
                    ..base
                },
                Status::Killed,
            ),
            (
                "exit -15",
                Evidence {
                    exit_code: Some(-15),
                    ..base
                },
                Status::Killed,
            ),
            (
                "exit 100",
                Evidence {
                    exit_code: Some(100),
                    ..base
                },
                Status::NeedsInput,
            ),
            (
                "exit wins over a live pid",
                Evidence {
                    exit_code: Some(0),
                    pid_alive: Some(true),
                    ..base
                },
                Status::Completed,
            ),
            (
                "alive",
                Evidence {
                    pid_alive: Some(true),
                    ..base
                },
                Status::Running,
            ),
            (
                "alive + question",
                Evidence {
                    pid_alive: Some(true),
                    waiting: q,
                    ..base
                },
                Status::Waiting,
            ),
            (
                "alive + gate",
                Evidence {
                    pid_alive: Some(true),
                    waiting: Some(Waiting::Approval),
                    ..base
                },
                Status::Waiting,
            ),
            (
                "dead pid",
                Evidence {
                    pid_alive: Some(false),
                    ..base
                },
                Status::Died,
            ),
            (
                "dead pid + question is not waiting",
                Evidence {
                    pid_alive: Some(false),
                    waiting: q,
                    ..base
                },
                Status::Died,
            ),
            (
                "no pid, young",
                Evidence {
                    age_secs: Some(5),
                    ..base
                },
                Status::Running,
            ),
            (
                "no pid, young, asking",
                Evidence {
                    age_secs: Some(5),
                    waiting: q,
                    ..base
                },
                Status::Waiting,
            ),
            (
                "no pid, 30 s old",
                Evidence {
                    age_secs: Some(30),
                    ..base
                },
                Status::Died,
            ),
            ("no pid, age unknown", base, Status::Died),
            ("nothing readable", Evidence::default(), Status::Unknown),
            (
                "only a live pid",
                Evidence {
                    pid_alive: Some(true),
                    ..Evidence::default()
                },
                Status::Running,
            ),
            (
                "only meta, young",
                Evidence {
                    has_meta: true,
                    age_secs: Some(1),
                    ..Evidence::default()
                },
                Status::Running,
            ),
            (
                "only log, exit",
                Evidence {
                    has_log: true,
                    exit_code: Some(0),
                    ..Evidence::default()
                },
                Status::Completed,
            ),
        ];
        for (name, evidence, want) in cases {
            assert_eq!(derive(evidence), *want, "{name}");
        }
    }

    /// Every exit code the table names (and none), with and without a requested stop: a stop
    /// turns every ending into `killed` and changes nothing while the agent lives.
    #[test]
    fn every_exit_code_with_and_without_a_requested_stop() {
        use Status::{Completed, Died, Failed, Killed, NeedsInput, Running, Unknown};
        let base = Evidence {
            has_meta: true,
            has_log: true,
            ..Evidence::default()
        };
        // (exit code, pid alive, waiting, without a stop, with a stop)
        let q = Some(Waiting::Question);
        let cases: &[(Option<i32>, Option<bool>, Option<Waiting>, Status, Status)] = &[
            (Some(0), None, None, Completed, Killed),
            (Some(1), None, None, Failed, Killed),
            (Some(2), None, None, Failed, Killed),
            (Some(-1), None, None, Failed, Killed),
            (Some(127), None, None, Failed, Killed),
            (Some(-9), None, None, Killed, Killed),
            (Some(137), None, None, Killed, Killed),
            (Some(143), None, None, Killed, Killed),
            (Some(-15), None, None, Killed, Killed),
            (Some(100), None, None, NeedsInput, Killed),
            (Some(0), Some(true), None, Completed, Killed),
            (None, Some(true), None, Running, Running),
            (None, Some(true), q, Status::Waiting, Status::Waiting),
            (None, Some(false), None, Died, Killed),
            (None, Some(false), q, Died, Killed),
            (None, None, None, Died, Killed),
        ];
        for &(exit_code, pid_alive, waiting, plain, stopped) in cases {
            for (stop_requested, want) in [(false, plain), (true, stopped)] {
                let e = Evidence {
                    exit_code,
                    pid_alive,
                    waiting,
                    stop_requested,
                    ..base
                };
                assert_eq!(derive(&e), want, "{e:?}");
                if let Some(code) = exit_code {
                    assert_eq!(Status::ended(code, stop_requested), want, "{e:?}");
                }
            }
        }
        let young = Evidence {
            age_secs: Some(1),
            stop_requested: true,
            ..base
        };
        assert_eq!(derive(&young), Running, "starting, not yet gone");
        let nothing = Evidence {
            stop_requested: true,
            ..Evidence::default()
        };
        assert_eq!(derive(&nothing), Unknown);
    }

    #[test]
    fn names_round_trip() {
        for s in Status::ALL {
            assert_eq!(s.as_str().parse::<Status>().unwrap(), s);
        }
        assert_eq!("Needs-Input".parse::<Status>().unwrap(), Status::NeedsInput);
        assert!(
            "sleeping"
                .parse::<Status>()
                .unwrap_err()
                .contains("needs_input")
        );
    }

    #[test]
    fn a_failure_that_names_a_usage_limit_is_limited_unless_stopped() {
        assert_eq!(ended_limited(1, false, true), Status::Limited);
        assert_eq!(ended_limited(1, false, false), Status::Failed);
        assert_eq!(
            ended_limited(1, true, true),
            Status::Killed,
            "a kill cancels the wait"
        );
        assert_eq!(ended_limited(0, false, true), Status::Completed);
        assert_eq!(ended_limited(100, false, true), Status::NeedsInput);
        assert_eq!(ended_limited(-9, false, true), Status::Killed);
    }
}
